package evidence

import (
	"testing"

	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/verdict"
)

// A script copied with scp -O and run with sh FILE: the copy is the first
// exec, the run the second, and only the run's tree writes the markers.
func TestWorkloadRequestUploaded(t *testing.T) {
	const id = "c-1"
	yes, no := true, false
	events := []control.Event{
		{Seq: 1, Kind: control.RequestSeen, Conn: 1, Session: 1, Request: "exec", Accepted: &yes},
		{Seq: 2, Kind: control.ExecReceived, Conn: 1, Session: 1, Ref: 1, Digest: "scp -t"},
		{Seq: 3, Kind: control.RequestSeen, Conn: 2, Session: 1, Request: "exec", Accepted: &no},
		{Seq: 4, Kind: control.RequestSeen, Conn: 2, Session: 2, Request: "exec", Accepted: &yes},
		{Seq: 5, Kind: control.ExecReceived, Conn: 2, Session: 2, Ref: 4, Digest: "sh job.sh"},
		{Seq: 6, Kind: control.ProcStartGate, Conn: 2, Session: 2, MarkerID: id},
		{Seq: 7, Kind: control.Workload, Conn: 2, Session: 2, Ref: 4, Request: "exec", MarkerID: id},
	}
	c := Of(events, id)
	if n := c.WorkloadRequest(); n != 2 {
		t.Errorf("WorkloadRequest = %d, want 2 (the refused request does not count)", n)
	}
	if n := c.FollowUps(""); n != 0 {
		t.Errorf("FollowUps = %d, want 0: the copy came before the workload", n)
	}
	if steps, _ := c.Steps("lookup", "note", ""); len(steps) != 1 || steps[0].Op != verdict.StepCreate {
		t.Errorf("Steps = %+v, want the create only: the copy is preparation", steps)
	}

	// A marker-wrapped exec is found by the server on arrival.
	events[4].MarkerID = id
	if n := Of(events, id).WorkloadRequest(); n != 0 {
		t.Errorf("marker-wrapped: WorkloadRequest = %d, want 0", n)
	}
	if n := Of(events[:5], id).WorkloadRequest(); n != 0 {
		t.Errorf("no workload: WorkloadRequest = %d, want 0", n)
	}
}
