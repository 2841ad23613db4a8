package containers

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sshrig/sshrig/internal/realclients"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/rig"
)

// TestRealClients: rig.TestRealClients on the container target. The honest
// wrappers pass the whole default matrix and their step cases,
// scp-legacy-honest.sh (scp -O, which runs the image's scp -t) included; the
// naive ones fail where their defect lies, among the matrix's cases and
// their step cases, with its rule. One container serves every case of a
// wrapper.
func TestRealClients(t *testing.T) {
	needDocker(t)
	if testing.Short() {
		t.Skip("runs real clients through the whole default matrix")
	}
	l := newLauncher(t)
	for _, w := range realclients.Wrappers() {
		t.Run(w.Script, func(t *testing.T) {
			for _, p := range w.Needs {
				if _, err := exec.LookPath(p); err != nil {
					t.Skipf("%s is not installed (.ci/run installs the real clients)", p)
				}
			}
			cases, steps, err := rig.SplitSelection(rig.DefaultMatrix(), w.CaseIDs())
			if err != nil {
				t.Fatal(err)
			}
			script, err := filepath.Abs(filepath.Join("..", w.Script))
			if err != nil {
				t.Fatal(err)
			}
			rep, d := runRig(t, rig.Options{Tool: tools.External{Argv: []string{script}}, Cases: cases, Target: rig.Container(l), StepCases: steps})
			t.Logf("%s (%.1fs)", rep.SummaryLine(), d.Seconds())
			var got []realclients.Verdict
			for _, c := range rep.Cases {
				v := realclients.Verdict{ID: c.ID, Verdict: string(c.Verdict), Reason: c.Reason}
				for _, x := range c.Violations {
					v.Rules = append(v.Rules, x.Rule)
				}
				got = append(got, v)
			}
			for _, problem := range realclients.Check(w, rep.Preflight.StepCases, got) {
				t.Error(problem)
			}
		})
	}
	noContainersOf(t, l)
}
