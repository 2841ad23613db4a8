package matrix

import (
	"slices"
	"testing"

	"github.com/sshrig/sshrig/fault"
)

// A later connection before the workload's request (the upload-then-run
// tool's second) is cut at its handshake and at its authentication, each
// held on that connection; the first connection's are the matrix's own
// moments, and a connection after the workload is not a step.
func TestStepCasesCutALaterConnection(t *testing.T) {
	conv := []fault.Request{
		{Conn: 1, Name: "connection", Occurrence: 1, Place: fault.BeforeWorkload},
		{Conn: 1, Session: 1, Name: "session", Occurrence: 1, Place: fault.BeforeWorkload},
		{Conn: 1, Session: 1, Name: "exec", Occurrence: 1, Place: fault.BeforeWorkload},
		{Conn: 2, Name: "connection", Occurrence: 2, Place: fault.BeforeWorkload},
		{Conn: 2, Session: 2, Name: "session", Occurrence: 2, Place: fault.BeforeWorkload},
		{Conn: 2, Session: 2, Name: "exec", Occurrence: 2, Place: fault.WorkloadPlace},
		{Conn: 3, Name: "connection", Occurrence: 3, Place: fault.AfterWorkload},
	}
	cases, capped := StepCases(conv)
	if capped != 0 {
		t.Fatalf("capped %d", capped)
	}
	var ids []string
	for _, c := range cases {
		ids = append(ids, c.ID)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
	}
	want := []string{
		"step.03-exec.reset", "step.03-exec.blackhole",
		"step.04-connection-handshake.reset", "step.04-connection-handshake.blackhole",
		"step.04-connection-auth.reset", "step.04-connection-auth.blackhole",
		"step.05-session.reset", "step.05-session.blackhole",
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("step cases\n got %v\nwant %v", ids, want)
	}
	for _, c := range cases[2:6] {
		if c.Step == nil || c.Step.Request != fault.ConnectionRequest || c.Step.Occurrence != 2 {
			t.Errorf("%s: step %v, want connection #2", c.ID, c.Step)
		}
		if c.Moment != fault.Handshake && c.Moment != fault.Auth {
			t.Errorf("%s: moment %s", c.ID, c.Moment)
		}
	}
}

// A workload sent over a session that reuses its connection (an OpenSSH
// ControlMaster's) is cut at its own request under the helper cuts, at
// moment exec and with no step: the master had sent the command when it
// died. The session that asked for the connection gets them too, as a step.
func TestStepCasesCutTheHelperAfterAReusedWorkloadLeft(t *testing.T) {
	conv := []fault.Request{
		{Conn: 1, Name: "connection", Occurrence: 1, Place: fault.BeforeWorkload},
		{Conn: 1, Session: 1, Name: "session", Occurrence: 1, Place: fault.BeforeWorkload},
		{Conn: 1, Session: 1, Name: "exec", Occurrence: 1, Place: fault.BeforeWorkload},
		{Conn: 1, Session: 2, Name: "session", Occurrence: 2, Place: fault.BeforeWorkload},
		{Conn: 1, Session: 2, Name: "exec", Occurrence: 2, Place: fault.WorkloadPlace},
	}
	cases, _ := StepCases(conv)
	var ids []string
	for _, c := range cases {
		ids = append(ids, c.ID)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
	}
	want := []string{
		"step.03-exec.reset", "step.03-exec.blackhole",
		"step.04-session.reset", "step.04-session.blackhole",
		"step.04-session.kill-helper", "step.04-session.wedge-helper", "step.04-session.expire-helper",
		"step.05-exec.kill-helper", "step.05-exec.wedge-helper", "step.05-exec.expire-helper",
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("step cases\n got %v\nwant %v", ids, want)
	}
	for _, c := range cases[7:] {
		if c.Moment != fault.Exec || c.Step != nil || !c.Cut.HelperCut() {
			t.Errorf("%s: moment %s, step %v, cut %s: want exec, no step, a helper cut", c.ID, c.Moment, c.Step, c.Cut)
		}
	}
	// The workload on the connection's first session is the matrix's: no
	// step case for it.
	alone := slices.Clone(conv[:3])
	alone[2].Place = fault.WorkloadPlace
	cases, _ = StepCases(alone)
	if len(cases) != 0 {
		t.Errorf("a workload on an unshared connection got step cases: %v", cases)
	}
	for _, c := range cases {
		if c.Moment == fault.Exec {
			t.Errorf("%s: a workload on an unshared connection got a step case", c.ID)
		}
	}
}
