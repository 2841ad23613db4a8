package rig

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/realclients"
	"github.com/sshrig/sshrig/internal/tools"
)

// TestRealClients: each honest wrapper of a real client in docs/examples
// passes the whole default matrix and its step cases on the embedded target;
// each naive one, run on the cases of the default matrix and the step cases
// its table entry names, fails exactly where its defect lies, with the rule
// that names it, and passes where it does not. (containers.TestRealClients:
// the same on the container target.)
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real clients through the whole default matrix")
	}
	for _, w := range realclients.Wrappers() {
		t.Run(w.Script, func(t *testing.T) {
			for _, p := range w.Needs {
				if _, err := exec.LookPath(p); err != nil {
					t.Skipf("%s is not installed (.ci/run installs the real clients)", p)
				}
			}
			cases, steps, err := SplitSelection(DefaultMatrix(), w.CaseIDs())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rep, err := Run(ctx, Options{Tool: tools.External{Argv: []string{repoFile(t, w.Script)}}, Cases: cases, StepCases: steps})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep.SummaryLine())
			for _, problem := range realclients.Check(w, rep.Preflight.StepCases, reportVerdicts(rep)) {
				t.Error(problem)
			}
		})
	}
}

// reportVerdicts is a report as the realclients checks read it.
func reportVerdicts(rep *Report) []realclients.Verdict {
	var out []realclients.Verdict
	for _, c := range rep.Cases {
		v := realclients.Verdict{ID: c.ID, Verdict: string(c.Verdict), Reason: c.Reason}
		for _, x := range c.Violations {
			v.Rules = append(v.Rules, x.Rule)
		}
		out = append(out, v)
	}
	return out
}
