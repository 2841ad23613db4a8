package rig

import (
	"context"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/realclients"
	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/tools"
	"golang.org/x/sync/errgroup"
)

// TestRealClients: each honest wrapper of a real client in docs/examples
// passes the whole default matrix and its step cases on the embedded target;
// each naive one, run on the cases of the default matrix and the step cases
// its table entry names, fails exactly where its defect lies, with the rule
// that names it, and passes where it does not. (containers.TestRealClients:
// the same on the container target.) Each run's event log agrees with its
// report on every case run's verdict.
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real clients through the whole default matrix")
	}
	t.Parallel() // beside TestReferenceStable, which computes while this waits
	// Three wrappers at a time: a run spends most of its time waiting on
	// its clients' keepalive timeouts at blackhole cases, not computing,
	// and the rig's verdicts hold on a busy machine (a timing verdict seen
	// while busy is confirmed alone). t.Parallel would allow go test's
	// -parallel, the core count; t.Run may be called from goroutines.
	var g errgroup.Group
	g.SetLimit(3)
	defer g.Wait()
	for _, w := range realclients.Wrappers() {
		g.Go(func() error {
			t.Run(w.Script, func(t *testing.T) { checkRealClient(t, w) })
			return nil
		})
	}
}

// checkRealClient runs w on its cases and step cases and checks its
// verdicts against its table entry.
func checkRealClient(t *testing.T, w realclients.Wrapper) {
	testpeer.Need(t, w.Needs...)
	cases, steps, err := w.Selection()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out, err := CreateRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Sized to the tool and the machine, as a user's run is: a wrapper's own
	// fixed deadlines (timeout 2 scp, a cleanup's second) are part of the
	// tool, and sixteen cases of each of three wrappers at once starved
	// them on a 2-core machine whose process start costs 3 ms, so that
	// they reported what their expired deadlines said rather than what
	// their defect says. A timing verdict seen while busy is still
	// confirmed alone.
	rep, err := Run(ctx, Options{Tool: tools.External{Argv: []string{repoFile(t, w.Script)}}, Cases: cases, StepCases: steps, Out: out,
		Jump: w.Jump, Hosts: w.Hosts})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.SummaryLine())
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	checkLogAgrees(t, out.Path) // the log and the report agree
	for _, problem := range realclients.Check(w, rep.Preflight.StepCases, realclients.VerdictsOf(rep.Cases)) {
		t.Error(problem)
	}
}
