package evidence

import (
	"testing"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// A workload that arrives on a shell's stdin carries no markers in its
// request: the start gate (or the exec moment's hold) names its session.
func TestShellWorkload(t *testing.T) {
	const id = "c-1"
	zero, three := 0, 3
	probe := control.Event{Kind: control.ExecReceived, Conn: 1, Session: 1, Digest: "uname"}
	shell := control.Event{Kind: control.ExecReceived, Conn: 1, Session: 2, Detail: "shell: commands on stdin"}
	events := []control.Event{
		probe,
		{Kind: control.ProcSpawned, Conn: 1, Session: 1, PID: 10},
		{Kind: control.ProcExited, Conn: 1, Session: 1, PID: 10, ExitCode: &zero},
		{Kind: control.ExitSent, Conn: 1, Session: 1, ExitCode: &zero},
		shell,
		{Kind: control.ProcSpawned, Conn: 1, Session: 2, PID: 20},
		{Kind: control.ProcStartGate, Conn: 1, Session: 2, PID: 20, MarkerID: id, MarkerPID: 21},
		{Kind: control.ProcExited, Conn: 1, Session: 2, PID: 20, ExitCode: &three},
		{Kind: control.ExitSent, Conn: 1, Session: 2, ExitCode: &three},
	}
	c := Of(events, id)
	if n := c.Attempts(); n != 1 {
		t.Errorf("Attempts = %d, want 1 (the shell)", n)
	}
	if d := c.Delivered(); d == nil || d.ExitCode != 3 {
		t.Errorf("Delivered = %+v, want the shell's exit 3, not the probe's 0", d)
	}
	if n := c.FollowUps(""); n != 0 {
		t.Errorf("FollowUps = %d, want 0 (the probe came before the workload)", n)
	}
	cleanup := control.Event{Kind: control.ExecReceived, Conn: 1, Session: 3, Digest: "rm"}
	if n := Of(append(events[:len(events):len(events)], cleanup), id).FollowUps(""); n != 1 {
		t.Errorf("FollowUps = %d, want 1 (the command after the workload)", n)
	}
	ps := c.Processes()
	if len(ps) != 1 || ps[0].PID != 21 || !ps[0].ReachedStart || ps[0].ExitCode == nil || *ps[0].ExitCode != 3 {
		t.Errorf("Processes = %+v, want the marker shell 21 that reached its start and exited 3", ps)
	}

	// Cut at the exec moment: the shell never ran, its hold names it.
	held := []control.Event{shell, {Kind: control.MomentReached, Conn: 1, Session: 2, Moment: fault.Exec, Hold: true},
		{Kind: control.ExecSkipped, Conn: 1, Session: 2}}
	if n := Of(held, id).Attempts(); n != 1 {
		t.Errorf("held shell: Attempts = %d, want 1", n)
	}
	if n := Of([]control.Event{shell}, id).Attempts(); n != 0 {
		t.Errorf("a shell that is not the workload: Attempts = %d, want 0", n)
	}
}
