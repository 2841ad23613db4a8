package containers_test

import (
	"path/filepath"
	"testing"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/internal/realclients"
	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/rig"
	"golang.org/x/sync/errgroup"
)

// onContainer names the honest wrappers whose whole matrix runs on the
// container target too: those whose server side differs there (SFTP and
// scp -t in the image, each case's own tree made as nobody in a user
// namespace, a module-style wrapper run by the image's shell). The others differ from these only on the client's side, which
// the embedded target's run covers; every naive wrapper runs its pinned cases.
var onContainer = map[string]bool{
	"docs/examples/sftp-honest.sh":          true,
	"docs/examples/sftp-tmp-honest.sh":      true,
	"docs/examples/twoexec-fixed-honest.sh": true,
	"docs/examples/scp-legacy-honest.sh":    true,
	// Its wrapper's shell on the host is the image's busybox sh, whose
	// process tree the nested workload's truth is read from.
	"docs/examples/module-honest.sh": true,
	// Its jump host in the container reaches the rig's second cutter
	// across the container's bridge (Endpoint.RigHost).
	"docs/examples/ssh-jump-honest.sh": true,
}

// TestRealClients: rig.TestRealClients on the container target. The honest
// wrappers of onContainer pass the whole default matrix and their step cases,
// scp-legacy-honest.sh (scp -O, which runs the image's scp -t) included; the
// naive ones fail where their defect lies, among the matrix's cases and
// their step cases, with its rule. One container serves every case of a
// wrapper.
func TestRealClients(t *testing.T) {
	containers.NeedDocker(t)
	if testing.Short() {
		t.Skip("runs real clients through the whole default matrix")
	}
	// Two wrappers at a time, each with a launcher of its own: a run
	// mostly waits on its clients' keepalive timeouts, and rig's verdicts
	// hold on a busy machine. t.Run may be called from goroutines.
	var g errgroup.Group
	g.SetLimit(2)
	defer g.Wait()
	for _, w := range realclients.Wrappers() {
		if w.Defect == "" && !onContainer[w.Script] {
			continue // the client's side only: rig's TestRealClients runs it on the embedded target
		}
		g.Go(func() error {
			t.Run(w.Script, func(t *testing.T) { checkRealClient(t, w) })
			return nil
		})
	}
}

// checkRealClient runs w on its cases and step cases in a container of its
// own and checks its verdicts against its table entry.
func checkRealClient(t *testing.T, w realclients.Wrapper) {
	testpeer.Need(t, w.Needs...)
	cases, steps, err := w.Selection()
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", w.Script))
	if err != nil {
		t.Fatal(err)
	}
	l := containers.NewLauncher(t)
	// Sized to the tool and the machine, as a user's run is
	// (rig.TestRealClients says why).
	rep, d := runRig(t, rig.Options{Tool: tools.External{Argv: []string{script}}, Cases: cases, Target: rig.Container(l), StepCases: steps,
		Jump: w.Jump, Hosts: w.Hosts})
	t.Logf("%s (%.1fs)", rep.SummaryLine(), d.Seconds())
	noContainersOf(t, l)
	for _, problem := range realclients.Check(w, rep.Preflight.StepCases, realclients.VerdictsOf(rep.Cases)) {
		t.Error(problem)
	}
}
