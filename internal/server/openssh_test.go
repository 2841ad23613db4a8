package server_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/server"
	"github.com/sshrig/sshrig/markers"
)

// TestOpenSSHForcedPTY: ssh -tt runs the command under a terminal, and the
// conversation shows the pty-req accepted.
func TestOpenSSHForcedPTY(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	c := r.newCase(control.Arm{}, nil)
	args := append(c.sshArgs("-p"), "-tt", testUser+"@127.0.0.1", c.wrap("tty >/dev/null && echo on-a-terminal; exit 3"))
	out, code := run(t, "", "ssh", args...)
	if code != 3 || !strings.Contains(out, "on-a-terminal") {
		t.Fatalf("ssh -tt: exit %d, output %q; want 3 and on-a-terminal", code, out)
	}
	ev := c.Events()
	c.checkRan(3)
	conv := steps(ev)
	for _, want := range []string{"connection+", "session+", "pty-req+", "exec+"} {
		if !slices.Contains(conv, want) {
			t.Errorf("conversation %v lacks %s", conv, want)
		}
	}
	w := workload(t, ev)
	if req := requestAt(ev, w.Ref); req.Request != "exec" || req.Session != w.Session {
		t.Errorf("workload refers to %+v, want the exec request", req)
	}
}

// TestOpenSSHShellOnStdin: ssh -T with the script on stdin is a shell request;
// the workload is found on the shell's stdin.
func TestOpenSSHShellOnStdin(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	c := r.newCase(control.Arm{}, nil)
	args := append(c.sshArgs("-p"), "-T", testUser+"@127.0.0.1")
	out, code := run(t, c.wrap("echo from-stdin; exit 4")+"\n", "ssh", args...)
	if code != 4 || !strings.Contains(out, "from-stdin") {
		t.Fatalf("ssh -T: exit %d, output %q; want 4 and from-stdin", code, out)
	}
	ev := c.Events()
	c.checkRan(4)
	w := workload(t, ev)
	if req := requestAt(ev, w.Ref); req.Request != "shell" {
		t.Errorf("workload refers to %+v, want the shell request", req)
	}
	if slices.Contains(steps(ev), "pty-req+") {
		t.Errorf("ssh -T asked for a terminal: %v", steps(ev))
	}
}

// TestRefusedPTY: a server that refuses terminals says so in the
// conversation; ssh -tt goes on without one, as with sshd's PermitTTY no.
func TestRefusedPTY(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"config", "case"} {
		t.Run(name, func(t *testing.T) {
			cfg := server.Config{RefusePTY: name == "config"}
			r := newRig(t, cfg)
			c := r.newCase(control.Arm{}, func(req *control.Request) { req.RefusePTY = name == "case" })
			args := append(c.sshArgs("-p"), "-tt", testUser+"@127.0.0.1", c.wrap("tty >/dev/null || echo no-terminal"))
			out, code := run(t, "", "ssh", args...)
			// OpenSSH's ssh -tt gives up (255) when the terminal is refused.
			if code != 255 || !strings.Contains(out, "PTY allocation request failed") {
				t.Fatalf("ssh -tt with terminals refused: exit %d, output %q", code, out)
			}
			ev := c.Events()
			if !slices.Contains(steps(ev), "pty-req-") {
				t.Errorf("conversation %v does not show the refused pty-req", steps(ev))
			}
		})
	}
}

// TestSFTPUploadThenRun: a script uploaded with sftp and run with sh is the
// workload, although the marker-writing shell is a grandchild of the process
// the server started.
func TestSFTPUploadThenRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	c := r.newCase(control.Arm{}, nil)
	script := writeFile(t, r.dir, "job.sh", c.wrap("echo uploaded-ran; exit 5"))
	args := append(c.sshArgs("-P"), "-b", "-", testUser+"@127.0.0.1")
	if out, code := run(t, "put "+script+" job.sh\n", "sftp", args...); code != 0 {
		t.Fatalf("sftp: exit %d: %s", code, out)
	}
	args = append(c.sshArgs("-p"), testUser+"@127.0.0.1", "sh job.sh")
	out, code := run(t, "", "ssh", args...)
	if code != 5 || !strings.Contains(out, "uploaded-ran") {
		t.Fatalf("ssh sh job.sh: exit %d, output %q", code, out)
	}
	ev := c.Events()
	c.checkRan(5)
	conv := steps(ev)
	for _, want := range []string{"subsystem+", "sftp-open+", "sftp-write+", "sftp-close+"} {
		if !slices.Contains(conv, want) {
			t.Errorf("conversation %v lacks %s", conv, want)
		}
	}
	w := workload(t, ev)
	if req := requestAt(ev, w.Ref); req.Request != "exec" || req.Conn != 2 {
		t.Errorf("workload refers to %+v, want the exec on the second connection", req)
	}
	if w.MarkerPID == w.PID {
		t.Errorf("the marker was written by the process the server started (%d); want a grandchild", w.PID)
	}
}

// TestSCP: scp in SFTP mode and in legacy mode (-O, which runs scp -t on the
// server) both upload what a later exec runs.
func TestSCP(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"sftp", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t, server.Config{})
			c := r.newCase(control.Arm{}, nil)
			script := writeFile(t, r.dir, "job.sh", c.wrap("echo copied-ran"))
			args := c.sshArgs("-P")
			if mode == "legacy" {
				args = append(args, "-O")
			}
			args = append(args, script, testUser+"@127.0.0.1:job.sh")
			if out, code := run(t, "", "scp", args...); code != 0 {
				t.Fatalf("scp: exit %d: %s", code, out)
			}
			args = append(c.sshArgs("-p"), testUser+"@127.0.0.1", "sh job.sh")
			if out, code := run(t, "", "ssh", args...); code != 0 || !strings.Contains(out, "copied-ran") {
				t.Fatalf("ssh sh job.sh: exit %d, output %q", code, out)
			}
			ev := c.Events()
			c.checkRan(0)
			workload(t, ev)
		})
	}
}

// TestOpenSSHControlMaster: commands multiplexed over one ControlMaster
// connection are sessions of one connection; the wrapped one is the workload.
func TestOpenSSHControlMaster(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	c := r.newCase(control.Arm{}, nil)
	sock := r.dir + "/cm.sock"
	mux := []string{"-o", "ControlMaster=auto", "-o", "ControlPath=" + sock, "-o", "ControlPersist=yes"}
	target := testUser + "@127.0.0.1"
	if out, code := run(t, "", "ssh", append(append(c.sshArgs("-p"), mux...), "-n", target, "uname -s")...); code != 0 {
		t.Fatalf("probe: exit %d: %s", code, out)
	}
	out, code := run(t, "", "ssh", append(append(c.sshArgs("-p"), mux...), "-n", target, c.wrap("echo multiplexed; exit 2"))...)
	if code != 2 || !strings.Contains(out, "multiplexed") {
		t.Fatalf("workload: exit %d, output %q", code, out)
	}
	if out, code := run(t, "", "ssh", append(append(c.sshArgs("-p"), mux...), "-O", "exit", target)...); code != 0 {
		t.Fatalf("ssh -O exit: %d: %s", code, out)
	}
	ev := c.Events()
	c.checkRan(2)
	w := workload(t, ev)
	if len(find(ev, control.ConnAccepted)) != 1 {
		t.Errorf("%d connections, want 1 (multiplexed)", len(find(ev, control.ConnAccepted)))
	}
	if w.Session != 2 {
		t.Errorf("workload in session %d, want the second", w.Session)
	}
}

// TestOpenSSHOperationID: the same wrapped command sent twice with one
// operation id set in front of it (markers.WithOperationID) is the workload
// both times, each exec event carries the id, and the second run does not run
// the work: the ledger holds one start with the id and one dedup.
func TestOpenSSHOperationID(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	c := r.newCase(control.Arm{}, nil)
	cmd, err := markers.WithOperationID(c.wrap("echo worked; exit 3"), "op-1")
	if err != nil {
		t.Fatal(err)
	}
	args := append(c.sshArgs("-p"), "-T", testUser+"@127.0.0.1", cmd)
	if out, code := run(t, "", "ssh", args...); code != 3 || !strings.Contains(out, "worked") {
		t.Fatalf("first: exit %d, output %q; want 3 and worked", code, out)
	}
	if out, code := run(t, "", "ssh", args...); code != markers.ExitDeduplicated || strings.Contains(out, "worked") || !strings.Contains(out, markers.DedupNotice+"op-1") {
		t.Fatalf("again: exit %d, output %q; want %d and the dedup notice, not the work", code, out, markers.ExitDeduplicated)
	}
	ev := c.Events()
	execs := find(ev, control.ExecReceived)
	if len(execs) != 2 || execs[0].MarkerID != c.id || execs[0].OperationID != "op-1" || execs[1].OperationID != "op-1" {
		t.Errorf("exec events %+v, want two for %s with operation id op-1", execs, c.id)
	}
	l := c.ledger()
	if len(l) != 3 || l[0].Kind != markers.Start || l[0].OperationID != "op-1" || l[1].Kind != markers.Complete || l[2].Kind != markers.Dedup || l[2].OperationID != "op-1" {
		t.Errorf("ledger %+v, want a start with op-1, its complete, and a dedup", l)
	}
}
