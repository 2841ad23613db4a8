package evidence

import (
	"testing"

	"github.com/sshrig/sshrig/internal/control"
)

func exitEv(conn, session, code int) control.Event {
	return control.Event{Kind: control.ExitSent, Conn: conn, Session: session, ExitCode: &code}
}

// The workload's result is the exit status on its own session, whatever the
// tool ran before or after it.
func TestDeliveredIsTheWorkloads(t *testing.T) {
	const id = "c-1"
	events := []control.Event{
		{Kind: control.ExecReceived, Conn: 1, Session: 1}, // uname -s
		exitEv(1, 1, 0),
		{Kind: control.ExecReceived, Conn: 2, Session: 1, MarkerID: id}, // the workload
		exitEv(2, 1, 3),
		{Kind: control.ExecReceived, Conn: 3, Session: 1}, // cleanup
		exitEv(3, 1, 0),
	}
	d := Of(events, id).Delivered()
	if d == nil || d.ExitCode != 3 {
		t.Fatalf("Delivered() = %+v, want exit code 3", d)
	}
	if d := Of(events[:2], id).Delivered(); d != nil {
		t.Errorf("no workload: Delivered() = %+v, want nil", d)
	}
	if got := Of(events, id).Attempts(); got != 1 {
		t.Errorf("Attempts() = %d, want 1", got)
	}
}

func TestSettled(t *testing.T) {
	running := []control.Event{{Kind: control.ExecReceived}, {Kind: control.ProcSpawned, PID: 7}}
	if Settled(running) {
		t.Error("a running command counts as settled")
	}
	done := append(running, control.Event{Kind: control.ProcExited, PID: 7}, control.Event{Kind: control.ExecFinished})
	if !Settled(done) {
		t.Error("a finished command does not count as settled")
	}
	if got := ProcessGroups(done); len(got) != 1 || got[0] != 7 {
		t.Errorf("ProcessGroups() = %v, want [7]", got)
	}
}

// A client reaches user authentication only past the host key check: any
// credential the server saw means the tool accepted its key.
func TestPastKeyExchange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []control.Event
		want   string
	}{
		{"stopped at the key exchange", []control.Event{{Kind: control.ConnAccepted, Conn: 1}}, ""},
		{"offered a credential", []control.Event{{Kind: control.ConnAccepted, Conn: 1},
			{Kind: control.AuthRejected, Conn: 1, Detail: "publickey: not authorized"}}, "it offered a credential (publickey: not authorized)"},
		{"authenticated", []control.Event{{Kind: control.AuthRejected, Conn: 1, Detail: "none"},
			{Kind: control.AuthAccepted, Conn: 1, Detail: "publickey"}}, "it authenticated (publickey)"},
	} {
		if got := Of(tc.events, "c-1").PastKeyExchange(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A resend under an operation id: the wire shows each attempt's id, and the
// last attempt's exit status is the work's only when that attempt ran it
// (passed its start gate); a de-duplicated resend ran nothing.
func TestResendUnderAnOperationID(t *testing.T) {
	const id = "c-1"
	first := []control.Event{
		{Kind: control.ExecReceived, Conn: 1, Session: 1, MarkerID: id, OperationID: "op-1"},
		{Kind: control.ExecReceived, Conn: 1, Session: 2}, // a probe
		{Kind: control.ExecReceived, Conn: 2, Session: 1, MarkerID: id, OperationID: "op-1"},
	}
	ranWork := append(append([]control.Event{}, first...),
		control.Event{Kind: control.ProcStartGate, Conn: 2, Session: 1, MarkerID: id}, exitEv(2, 1, 0))
	deduplicated := append(append([]control.Event{}, first...), exitEv(2, 1, 123))
	if got := Of(ranWork, id).OperationIDs(); len(got) != 2 || got[0] != "op-1" || got[1] != "op-1" {
		t.Errorf("OperationIDs() = %q, want op-1 twice", got)
	}
	if d := Of(ranWork, id).ResendDelivered(); d == nil || d.ExitCode != 0 {
		t.Errorf("a resend that ran the work: ResendDelivered() = %+v, want exit code 0", d)
	}
	if d := Of(deduplicated, id).ResendDelivered(); d != nil {
		t.Errorf("a de-duplicated resend: ResendDelivered() = %+v, want nil", d)
	}
	gateOfFirst := append(append([]control.Event{}, first[:1]...), control.Event{Kind: control.ProcStartGate, Conn: 1, Session: 1, MarkerID: id})
	gateOfFirst = append(append(gateOfFirst, first[1:]...), exitEv(2, 1, 123))
	if d := Of(gateOfFirst, id).ResendDelivered(); d != nil {
		t.Errorf("the first attempt ran the work, the resend was de-duplicated: ResendDelivered() = %+v, want nil", d)
	}
}

// A host that restarted for real (CaseAdopted) ends every process of the
// boot before by SIGKILL, settles what was in flight, and starts a new
// boot's pids: the same pid after it is another process.
func TestBootBoundary(t *testing.T) {
	const id = "c-1"
	code := 0
	events := []control.Event{
		{Kind: control.ExecReceived, Conn: 1, Session: 1, MarkerID: id},
		{Kind: control.ProcSpawned, Conn: 1, Session: 1, PID: 9},
		{Kind: control.ProcStartGate, Conn: 1, Session: 1, PID: 9, MarkerID: id, MarkerPID: 9},
	}
	if Settled(events) {
		t.Fatal("a running command counts as settled")
	}
	events = append(events, control.Event{Kind: control.CaseAdopted})
	if !Settled(events) {
		t.Fatal("a command of the boot before the restart does not count as settled")
	}
	events = append(events,
		control.Event{Kind: control.ExecReceived, Conn: 2, Session: 1, MarkerID: id},
		control.Event{Kind: control.ProcSpawned, Conn: 2, Session: 1, PID: 9},
		control.Event{Kind: control.ProcStartGate, Conn: 2, Session: 1, PID: 9, MarkerID: id, MarkerPID: 9},
		control.Event{Kind: control.ProcExited, Conn: 2, Session: 1, PID: 9, ExitCode: &code},
	)
	ps := Of(events, id).Processes()
	if len(ps) != 2 {
		t.Fatalf("Processes() = %+v, want two: one per boot", ps)
	}
	if !ps[0].Exited || ps[0].Signal != "KILL" || !ps[0].ReachedStart {
		t.Errorf("the boot before's process: %+v, want started and killed", ps[0])
	}
	if !ps[1].Exited || ps[1].Signal != "" || ps[1].ExitCode == nil || *ps[1].ExitCode != 0 {
		t.Errorf("the new boot's process: %+v, want exited 0", ps[1])
	}
}
