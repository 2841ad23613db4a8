package containers_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/internal/agentrun"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
)

// The agent under test on the container target: the honest example agent
// passes every case of the agent matrix, and the naive one fails the cuts
// after its create's request left and the refusals, as on embedded.
func TestAgentsOnContainer(t *testing.T) {
	containers.NeedDocker(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the example agents are Python (apt-get install python3)")
	}
	l := containers.NewLauncher(t)
	if _, err := l.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs("../docs/examples")
	if err != nil {
		t.Fatal(err)
	}
	agent := func(name string) *agentrun.Tool {
		a, err := agentrun.New("python3 "+filepath.Join(examples, name), agentrun.Options{ApprovalWait: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := matrix.AgentMatrix()
	honest, d := runRig(t, rig.Options{Tool: agent("agent-honest.py"), Cases: cases, Target: rig.Container(l)})
	t.Logf("agent matrix (%d cases, agent-honest.py) on container: %.1fs", len(cases), d.Seconds())
	for _, c := range honest.Cases {
		if c.Verdict != report.Pass {
			t.Errorf("agent-honest.py, %s: %s %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
		}
	}
	naive, _ := runRig(t, rig.Options{Tool: agent("agent-naive.py"), Cases: cases, Target: rig.Container(l)})
	for _, c := range naive.Cases {
		want := ""
		switch c.ID {
		case "agent.create.exec.reset.hangup", "agent.create.started.reset.survive", "agent.create.output.reset.survive",
			"agent.create.finished.reset", "agent.create.started.blackhole.survive", "agent.create.finished.blackhole",
			"agent.note.exec.reset.hangup", "agent.note.finished.reset":
			want = verdict.RuleTransition
		case "agent.lookup.exec.reset", "agent.lookup.finished.reset", "agent.lookup.exec.blackhole":
			want = verdict.RuleBlindRetry
		case "approval.deny", "approval.silent":
			want = verdict.RuleAgentMutatedAfterDenial
		}
		failed := false
		for _, v := range c.Violations {
			failed = failed || v.Rule == want
		}
		if want != "" && (c.Verdict != report.Fail || !failed) {
			t.Errorf("agent-naive.py, %s: %s %v; want %s", c.ID, c.Verdict, c.Violations, want)
		}
	}
}
