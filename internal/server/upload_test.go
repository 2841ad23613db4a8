package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/server"
)

// uploadCutArm is a step case's arm that cuts the case's upload after n
// bytes, as matrix.StepCases makes it.
func uploadCutArm(n int64) control.Arm {
	return control.Arm{Moment: fault.PrepStep, Disposition: fault.Survive, Step: &fault.Step{Request: "upload", UploadBytes: n}}
}

// fourKiB is a 4 KiB file of numbered lines: any prefix of it is told
// from any other by its hash.
func fourKiB() string {
	var b strings.Builder
	for i := 0; b.Len() < 4096; i++ {
		fmt.Fprintf(&b, "# line %04d of a job uploaded whole or not at all\n", i)
	}
	return b.String()[:4096]
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// uploadState is the case's one UploadState event's measurement.
func uploadState(t *testing.T, events []control.Event) control.Upload {
	t.Helper()
	states := find(events, control.UploadState)
	if len(states) != 1 || states[0].Upload == nil {
		t.Fatalf("%d upload_state events (%+v), want 1 with its measurement; conversation %v", len(states), states, steps(events))
	}
	return *states[0].Upload
}

// probeFile is a reconcile probe of the case's host, as a tool's own runs
// during the case: the size and SHA-256 of name as a command sees them.
func probeFile(h *hostClient, name string) (int64, string) {
	h.t.Helper()
	out := strings.Fields(h.exec("wc -c < " + name + " && sha256sum < " + name))
	if len(out) < 2 {
		h.t.Fatalf("probe of %s printed %q", name, out)
	}
	size, err := strconv.ParseInt(out[0], 10, 64)
	if err != nil {
		h.t.Fatalf("probe of %s: size %q", name, out[0])
	}
	return size, out[1]
}

// TestCutUploadLeavesPartialFile: a 4 KiB upload cut after 64 bytes, by
// OpenSSH's sftp and by scp in its legacy mode (scp -t on the server),
// leaves a partial file. A reconcile probe run on the case's host after the
// cut sees it, and the server's upload_state at the case's end says the
// same size and hash, and how many bytes arrived. OpenSSH's SFTP writes in
// place, so the file holds exactly the 64 bytes that arrived; scp -t writes
// whole blocks, so it may hold fewer.
func TestCutUploadLeavesPartialFile(t *testing.T) {
	t.Parallel()
	content := fourKiB()
	for _, copier := range []string{"sftp", "scp-legacy"} {
		t.Run(copier, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, server.Config{})
			c := r.newCase(uploadCutArm(64), nil)
			c.cutAndRelease(fault.Reset)
			local := writeFile(t, r.dir, "job.sh", content)
			var out string
			var code int
			if copier == "sftp" {
				args := append(c.sshArgs("-P"), "-b", "-", testUser+"@127.0.0.1")
				out, code = run(t, "put "+local+" job.sh\n", "sftp", args...)
			} else {
				args := append(c.sshArgs("-P"), "-O", local, testUser+"@127.0.0.1:job.sh")
				out, code = run(t, "", "scp", args...)
				// scp -t writes what it has once its stdin ends.
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if !c.waitFor(ctx, func(e control.Event) bool { return e.Kind == control.ProcExited }) {
					t.Fatal("scp -t did not exit after the cut")
				}
			}
			if code == 0 {
				t.Fatalf("%s exited 0 after its upload was cut: %s", copier, out)
			}
			size, sum := probeFile(c.dial(), "job.sh")
			up := uploadState(t, c.Events())
			t.Logf("%s left %+v", copier, up)
			if up.Arrived != 64 || path.Base(up.Path) != "job.sh" || !path.IsAbs(up.Path) || up.Absent != "" || up.Rewritten || len(up.TempFiles) > 0 {
				t.Errorf("upload state %+v, want job.sh with 64 bytes arrived, present, no temp files", up)
			}
			if up.Size != size || up.SHA256 != sum {
				t.Errorf("upload state says %d bytes, sha256 %s; the probe saw %d, %s", up.Size, up.SHA256, size, sum)
			}
			if copier == "sftp" && (up.Size != 64 || up.SHA256 != sha(content[:64])) {
				t.Errorf("sftp left %d bytes, sha256 %s; want the first 64 bytes of the file (%s)", up.Size, up.SHA256, sha(content[:64]))
			}
			if up.Size > 64 {
				t.Errorf("the file holds %d bytes; only 64 arrived", up.Size)
			}
		})
	}
}

// TestCutUploadTempFilesAndRewrite: the bytes of every upload of a case
// count toward its cut; an upload begun and never finished beside the cut
// file is a temp file of it, and an upload of the same name that finishes
// after the cut rewrites it.
func TestCutUploadTempFilesAndRewrite(t *testing.T) {
	t.Parallel()
	content := fourKiB()
	for _, rewrite := range []bool{false, true} {
		t.Run(fmt.Sprintf("rewrite=%v", rewrite), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, server.Config{})
			c := r.newCase(uploadCutArm(64), nil)
			c.cutAndRelease(fault.Reset)
			h := c.dial()
			sc, err := sftp.NewClient(h.cl)
			if err != nil {
				t.Fatal(err)
			}
			part, err := sc.Create(".job.sh.part")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := part.Write([]byte(content[:10])); err != nil {
				t.Fatal(err)
			}
			f, err := sc.Create("job.sh")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte(content)); err == nil {
				t.Fatal("the write the case cut succeeded")
			}
			sc.Close()
			after := c.dial()
			if rewrite {
				after.put("job.sh", content)
			}
			size, sum := probeFile(after, "job.sh")
			up := uploadState(t, c.Events())
			if up.Arrived != 54 || up.Size != size || up.SHA256 != sum || up.Rewritten != rewrite {
				t.Errorf("upload state %+v; want 54 bytes arrived (64 counting the other file's 10), rewritten %v, and the probe's %d bytes, %s", up, rewrite, size, sum)
			}
			if !rewrite && (size != 54 || sum != sha(content[:54])) {
				t.Errorf("the probe saw %d bytes, %s; want the 54 that arrived", size, sum)
			}
			if len(up.TempFiles) != 1 || up.TempFiles[0] != ".job.sh.part" {
				t.Errorf("temp files %q, want [.job.sh.part]", up.TempFiles)
			}
		})
	}
}

// TestNoUploadNoState: a case that cuts no upload says nothing of one.
func TestNoUploadNoState(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	c := r.newCase(control.Arm{}, nil)
	c.dial().put("job.sh", fourKiB())
	if states := find(c.Events(), control.UploadState); len(states) != 0 {
		t.Errorf("upload_state events %+v for a case that cut no upload", states)
	}
}
