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
// wrappers pass the whole default matrix, scp-legacy-honest.sh (scp -O, which
// runs the image's scp -t) included; the naive ones fail where their defect
// lies, with its rule. One container serves every case of a wrapper.
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
			cases, steps := rig.DefaultMatrix(), rig.StepSelection{Globs: []string{"step.*"}}
			if !w.Honest() {
				steps = rig.StepSelection{}
				var ids []string
				for _, c := range w.Caught {
					ids = append(ids, c.ID)
				}
				cases = selectCases(t, ids)
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
			for _, problem := range realclients.Check(w, got) {
				t.Error(problem)
			}
		})
	}
	noContainersOf(t, l)
}
