package containers

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/engine"
)

// leftovers lists the containers of the run labelled runID, with the client
// and, when the docker CLI is installed, with the command docs/containers.md
// shows: docker ps -a --filter label=org.sshrig.run=ID. Other runs' on the
// same engine (another test run's, another user's) are none of its business.
func leftovers(t *testing.T, runID string) []string {
	t.Helper()
	left := rigContainers(t, LabelRun+"="+runID)
	if docker, err := exec.LookPath("docker"); err == nil {
		out, err := exec.Command(docker, "ps", "-a", "--filter", "label="+LabelRun+"="+runID, "--format", "{{.ID}}").Output()
		if err != nil {
			t.Errorf("docker ps: %v", err)
		}
		for _, id := range strings.Fields(string(out)) {
			if !strings.Contains(strings.Join(left, " "), id) {
				left = append(left, id+" (docker ps)")
			}
		}
	}
	return left
}

// testRunID is a run id for a CLI run of this test, unique to this test run.
func testRunID(t *testing.T) string {
	return newLauncher(t).ID()
}

// Acceptance 3: runs of the CLI interrupted by SIGINT (or SIGTERM) at a
// random point — while the container starts, during the preflight and
// first cases, later in the matrix — exit 3 (before any case ran) or 130
// (once cases ran, with the report of what was judged) and leave no
// container behind.
func TestInterruptedRunsLeaveNothing(t *testing.T) {
	needDocker(t)
	for _, tc := range []struct {
		name  string
		sig   os.Signal
		after string        // a stderr line to wait for first ("" = the start)
		upTo  time.Duration // then a random delay up to this
	}{
		{"SIGINT while starting", os.Interrupt, "", 1500 * time.Millisecond},
		{"SIGINT once ready", os.Interrupt, ") ready in ", 1000 * time.Millisecond},
		{"SIGINT mid-matrix", os.Interrupt, "[5/", 2000 * time.Millisecond},
		{"SIGTERM mid-matrix", syscall.SIGTERM, "[3/", 2000 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// docs/containers.md: sshrig run --target container --server-binary PATH
			runID := testRunID(t)
			s := startSshrig(t, "run", "--target", "container", "--server-binary", staticBin, "--run-id", runID, "--out", filepath.Join(t.TempDir(), "run"))
			if tc.after != "" {
				s.waitLine(t, tc.after)
			}
			delay := rand.N(tc.upTo)
			select {
			case <-time.After(delay): // the random point; nothing is waited for here
			case <-s.done:
			}
			if err := s.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			exited := make(chan int, 1)
			go func() { exited <- s.wait() }()
			var code int
			select {
			case code = <-exited:
			case <-time.After(time.Minute):
				t.Fatalf("sshrig still running a minute after %s; stderr:\n%s", tc.sig, s.stderr())
			}
			t.Logf("%s %s after %q: exit %d; stderr ends:\n%s", tc.sig, delay.Round(time.Millisecond), tc.after, code, tail(s.stderr(), 4))
			// -1: the signal came before the CLI handled signals at all;
			// 3: before any case ran (nothing judged); 130: once cases ran
			// (the report holds what was judged, marked interrupted).
			if code != 3 && code != 130 && code != -1 {
				t.Errorf("exit %d after %s, want 3 or 130", code, tc.sig)
			}
			if left := leftovers(t, runID); len(left) > 0 {
				t.Errorf("containers left behind: %v", left)
			}
		})
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A run killed with SIGKILL cannot clean up; `sshrig gc --run ID` removes
// what it left, and says so, and nothing of another run: the test removes
// only what it created, whatever else the engine holds.
func TestGCRemovesWhatAKilledRunLeft(t *testing.T) {
	needDocker(t)
	// docs/containers.md: ./sshrig run --target container --run-id ID (the
	// static build runs itself in the container: no --server-binary)
	runID := testRunID(t)
	s := startSshrig(t, "run", "--target", "container", "--run-id", runID, "--out", filepath.Join(t.TempDir(), "run"))
	s.waitLine(t, "labelled "+LabelRun+"="+runID+" ('sshrig gc --run "+runID+"'")
	line := s.waitLine(t, ") ready in ")
	f := strings.Fields(line) // sshrig: container <id> (<image>) ready in …
	if len(f) < 3 || f[1] != "container" {
		t.Fatalf("unexpected line %q", line)
	}
	id := f[2]
	s.cmd.Process.Kill()
	s.wait()
	if left := leftovers(t, runID); len(left) != 1 || !strings.HasPrefix(left[0], id) {
		t.Fatalf("after SIGKILL, want container %s left, found %v", id, left)
	}
	// Another run's gc leaves it alone.
	other := testRunID(t)
	r := sshrig(t, nil, "gc", "--run", other)
	if r.code != 0 || r.stdout != "nothing to remove of run "+other+"\n" {
		t.Errorf("gc --run %s: exit %d, output %q; want exit 0 and nothing removed", other, r.code, r.stdout)
	}
	if left := leftovers(t, runID); len(left) != 1 {
		t.Fatalf("gc of another run removed this run's container: %v left", left)
	}
	// docs/containers.md: sshrig gc --run ID
	r = sshrig(t, nil, "gc", "--run", runID)
	if r.code != 0 || !strings.Contains(r.stdout, "removed container "+id) || !strings.Contains(r.stdout, " run "+runID+"\n") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("gc --run %s: exit %d, output %q; want exit 0 and the container %s named, alone", runID, r.code, r.stdout, id)
	}
	if left := leftovers(t, runID); len(left) > 0 {
		t.Errorf("after gc: %v", left)
	}
}

// Acceptance 4: without a Docker engine, `sshrig run --target container`
// and `sshrig gc` exit 3 with a message that says what to do, and the
// library's errors wrap ErrNoDocker. Needs no Docker engine.
func TestNoDocker(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "no-docker.sock")
	env := []string{"DOCKER_HOST=unix://" + sock}
	out := filepath.Join(t.TempDir(), "run")
	r := sshrig(t, env, "run", "--target", "container", "--out", out)
	if r.code != 3 {
		t.Errorf("run --target container without Docker: exit %d, want 3", r.code)
	}
	want := []string{"no Docker engine", sock, "start Docker", "--target embedded"}
	if _, err := checkStatic(DefaultBusybox); err != nil {
		// The image's busybox is checked first, without the engine.
		want = []string{"busybox-static"}
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("run without Docker: stderr %q lacks %q", r.stderr, w)
		}
	}
	r = sshrig(t, env, "run", "--target", "container", "--image", "debian:stable", "--out", out)
	if r.code != 3 || !strings.Contains(r.stderr, "no Docker engine") || !strings.Contains(r.stderr, "--target embedded") {
		t.Errorf("run --image without Docker: exit %d, stderr %q", r.code, r.stderr)
	}
	r = sshrig(t, env, "gc", "--run", "no-such-run")
	if r.code != 3 || !strings.Contains(r.stderr, "no Docker engine") {
		t.Errorf("gc without Docker: exit %d, stderr %q", r.code, r.stderr)
	}

	t.Setenv("DOCKER_HOST", "unix://"+sock)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := GC(ctx, GCOptions{}); !errors.Is(err, ErrNoDocker) {
		t.Errorf("GC: %v, want ErrNoDocker", err)
	}
	l := &Launcher{ServerBinary: staticBin, BaseImage: "debian:stable"}
	if _, err := engine.Start(ctx, engine.Options{Launcher: l}); !errors.Is(err, ErrNoDocker) {
		t.Errorf("engine.Start: %v, want ErrNoDocker", err)
	}
}
