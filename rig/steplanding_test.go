package rig

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/realclients"
	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
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
			testpeer.Need(t, needs...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			start := time.Now()
			rep, err := Run(ctx, Options{Tool: tools.External{Argv: []string{repoFile(t, script)}},
				StepCases: matrix.StepSelection{Globs: []string{"step.*"}, Required: []string{"step.*"}},
				Repeat:    Repeat{Times: *stepReps, Seed: 1}, Parallel: DefaultParallel})
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
				if c.Verdict != report.Pass {
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

var pipelinedReps = flag.Int("sshrig.pipelined-reps", 3, "repetitions of every step case in TestPipelinedStepKnowledge (docs/performance.md runs it with 200: 800 case runs)")

// TestPipelinedStepKnowledge: OpenSSH's client sends env and pty-req
// without waiting for replies and its exec right behind them, so at a step
// cut "after env" or "after pty-req" the workload's request has usually
// left the client and reached the server, which may run it. What the tool
// could know then comes from what crossed the wire, not from the step's
// name: the honest ssh -tt wrapper, given a SetEnv, passes every step case
// every time, and no case expects local_failure ("nothing was sent") where
// the workload ran.
//
//	go test -race -run TestPipelinedStepKnowledge ./rig -args -sshrig.pipelined-reps=200
func TestPipelinedStepKnowledge(t *testing.T) {
	if testing.Short() {
		t.Skip("repeats OpenSSH's step cases")
	}
	testpeer.Need(t, "ssh")
	b, err := os.ReadFile(repoFile(t, "docs/examples/ssh-tt-honest.sh"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	const opts = "-tt -a -x \\\n"
	if !strings.Contains(src, opts) {
		t.Fatalf("docs/examples/ssh-tt-honest.sh no longer passes %q to ssh", opts)
	}
	script := filepath.Join(t.TempDir(), "ssh-env-tt-honest.sh")
	if err := os.WriteFile(script, []byte(strings.Replace(src, opts, "-tt -a -x -o SetEnv=SSHRIG_PIPELINED=1 \\\n", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Tool: tools.External{Argv: []string{script}},
		StepCases: matrix.StepSelection{Globs: []string{"step.*-env.*", "step.*-pty-req.*"}, Required: []string{"step.*-env.*", "step.*-pty-req.*"}},
		Repeat:    Repeat{Times: *pipelinedReps, Seed: 1}, Parallel: DefaultParallel})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{} // expected category and truth, for the log
	var failures []string
	for _, c := range rep.Cases {
		truth := "no truth"
		if c.Truth != nil {
			truth = string(c.Truth.State)
		}
		seen[string(c.Expected.Category)+" / "+truth]++
		if c.Verdict != report.Pass {
			failures = append(failures, c.ID+": "+string(c.Verdict)+" "+c.Reason)
		}
		if c.Expected.Category == result.LocalFailure && c.Truth != nil && c.Truth.State != reconcile.NotStarted {
			failures = append(failures, fmt.Sprintf("%s: expects %s, but the workload %s", c.ID, c.Expected.Category, c.Truth.State))
		}
	}
	if want := 4 * *pipelinedReps; len(rep.Cases) != want {
		t.Errorf("%d case runs, want %d (env and pty-req, each under %d cuts, %d times)", len(rep.Cases), want, len(matrix.StepCuts()), *pipelinedReps)
	}
	if len(failures) > 0 {
		if len(failures) > 5 {
			failures = failures[:5]
		}
		t.Fatalf("%s; first failures:\n%s", rep.SummaryLine(), strings.Join(failures, "\n"))
	}
	t.Logf("%d case runs, all pass; expected / truth: %v", len(rep.Cases), seen)
}
