package rig

import (
	"context"
	"flag"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/realclients"
	"github.com/sshrig/sshrig/internal/tools"
)

var stepReps = flag.Int("sshrig.step-reps", 3, "repetitions of every step case in TestStepCasesLandEveryTime (docs/performance.md runs it with 200)")

// TestStepCasesLandEveryTime repeats every step case of two real tools whose
// operation is a conversation, with real clients in their honest wrappers:
// the upload-then-run wrapper (sftp puts a script, ssh runs it) and the
// ControlMaster wrapper (a probe, the workload and the master's exit, each a
// session multiplexed over the master's one connection). Every case run
// must land at its step and pass; a cut that missed its step would make the
// case run inconclusive. Nothing waits on time: the server holds at the step
// until the cutter has cut.
//
//	go test -race -run TestStepCasesLandEveryTime ./rig -args -sshrig.step-reps=200
func TestStepCasesLandEveryTime(t *testing.T) {
	if testing.Short() {
		t.Skip("repeats real clients' step cases")
	}
	for _, script := range []string{"docs/examples/sftp-honest.sh", "docs/examples/controlmaster-honest.sh"} {
		t.Run(script, func(t *testing.T) {
			var needs []string
			for _, w := range realclients.Wrappers() {
				if w.Script == script {
					needs = w.Needs
				}
			}
			for _, p := range needs {
				if _, err := exec.LookPath(p); err != nil {
					t.Skipf("%s is not installed (.ci/run installs the real clients)", p)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			start := time.Now()
			rep, err := Run(ctx, Options{Tool: tools.External{Argv: []string{repoFile(t, script)}},
				StepCases: StepSelection{Globs: []string{"step.*"}, Required: []string{"step.*"}},
				Repeat:    Repeat{Times: *stepReps, Seed: 1}})
			if err != nil {
				t.Fatal(err)
			}
			runs := map[string]int{}
			var failures []string
			for _, c := range rep.Cases {
				if !strings.HasPrefix(c.ID, "step.") {
					t.Fatalf("a case that is not a step case ran: %s", c.ID)
				}
				runs[c.ID]++
				if c.Verdict != Pass {
					failures = append(failures, c.ID+": "+string(c.Verdict)+" "+c.Reason)
				}
			}
			if len(runs) == 0 {
				t.Fatal("no step cases: the preflight's conversation has none")
			}
			for id, n := range runs {
				if n != *stepReps {
					t.Errorf("%s ran %d times, want %d", id, n, *stepReps)
				}
			}
			if len(failures) > 0 {
				if len(failures) > 5 {
					failures = failures[:5]
				}
				t.Fatalf("%s; first failures:\n%s", rep.SummaryLine(), strings.Join(failures, "\n"))
			}
			t.Logf("%d step cases, each landed and passed %d of %d (%d case runs in %s)", len(runs), *stepReps, *stepReps, len(rep.Cases), time.Since(start).Round(time.Second))
		})
	}
}
