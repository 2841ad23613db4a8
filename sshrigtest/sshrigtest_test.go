package sshrigtest_test

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/kernelnet"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/sshrigtest"
	"github.com/sshrig/sshrig/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reference is the rig's honest client as a Go function tool.
var reference = sshrigtest.Func("reference-func", runReference)

func TestRunPassesAnHonestFuncTool(t *testing.T) {
	h := sshrigtest.New(t)
	rep := h.Run(t, reference, "started.reset.*", "none.*", "accept.kill-helper.survive")
	if rep == nil {
		t.Fatal("no report")
	}
	want := map[string]report.Verdict{"started.reset.survive": report.Pass, "none.exit0": report.Pass, "none.exit3": report.Pass,
		"accept.kill-helper.survive": report.Skipped}
	for _, cr := range rep.Cases {
		if w, ok := want[cr.ID]; ok && cr.Verdict != w {
			t.Errorf("%s: %s, want %s", cr.ID, cr.Verdict, w)
		}
	}
}

// On the kernel network a Go tool that dials with Target.Dial is judged as
// behind the proxy, and meets the kernel's own cuts, vanish among them.
func TestRunOnTheKernelNetwork(t *testing.T) {
	if err := kernelnet.Check(); err != nil {
		if os.Getenv("SSHRIG_REQUIRE_NETNS") == "1" {
			t.Fatalf("SSHRIG_REQUIRE_NETNS=1 but: %v", err)
		}
		t.Skipf("no kernel network here: %v", err)
	}
	h := sshrigtest.New(t, sshrigtest.WithNet(rig.NetKernel), sshrigtest.WithCases(append(matrix.DefaultMatrix(), matrix.KernelMatrix()...)))
	rep := h.Run(t, reference, "started.*", "none.*", "exit-status.vanish.*")
	if rep.Net != string(rig.NetKernel) {
		t.Errorf("report's net %q", rep.Net)
	}
	var vanish int
	for _, cr := range rep.Cases {
		if cr.Cut == fault.Vanish.String() {
			vanish++
		}
		if cr.Verdict != report.Pass && cr.Verdict != report.Skipped {
			t.Errorf("%s: %s", cr.ID, cr.Verdict)
		}
	}
	if vanish != 5 {
		t.Errorf("%d vanish cases, want 5", vanish)
	}
}

func TestRunCaseExplainsADefect(t *testing.T) {
	liar, err := tools.Lookup("mutant:lost-status-is-success")
	if err != nil {
		t.Fatal(err)
	}
	h := sshrigtest.New(t)
	c := matrix.Case{ID: "started.reset.survive", Moment: fault.Started, Cut: fault.Reset}
	cr := h.RunCase(t, liar, c)
	if cr.Verdict != report.Fail {
		t.Fatalf("verdict %s, want fail:\n%s", cr.Verdict, sshrigtest.Explain(cr))
	}
	msg := sshrigtest.Explain(cr)
	for _, want := range []string{"reported: succeeded/", "honest:   outcome_unknown/reconcile_first", "remotely: completed",
		"violation: " + report.AssertCategory + "/unsafe_category"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Explain lacks %q:\n%s", want, msg)
		}
	}
}

func TestRunCaseRejectsAnInvalidCase(t *testing.T) {
	// A case built in Go gets the checks a matrix file's case gets.
	c := matrix.Case{ID: "none.reset", Moment: fault.None, Cut: fault.Reset}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "cut: a cut cannot apply at moment none") {
		t.Fatalf("Validate() = %v", err)
	}
}

func TestExec(t *testing.T) {
	if _, err := sshrigtest.Exec("sshrig-no-such-program"); err == nil {
		t.Error("Exec of a missing program: no error")
	}
	tl, err := sshrigtest.Exec("sh", "-c", "exit 0")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tl.(tool.Process); !ok {
		t.Errorf("Exec's tool %T does not run as a process", tl)
	}
}

// A tool that runs a probe before its workload and a cleanup after it is
// judged by the workload's own exit status (issue 13): an honest one passes
// wherever the caller receives a result.
func TestWorkloadExitStatusAmongOtherCommands(t *testing.T) {
	run := runReference
	probing := sshrigtest.Func("uname-then-cleanup", func(ctx context.Context, t tool.Target) result.Result {
		pre, post := t, t
		pre.Command, post.Command = "uname -s", "true"
		run(ctx, pre)
		r := run(ctx, t)
		run(ctx, post)
		return r
	})
	h := sshrigtest.New(t)
	rep := h.Run(t, probing, "none.*", "exit-status.*")
	for _, cr := range rep.Cases {
		if cr.ID == "none.exit3" && (cr.Reported == nil || cr.Reported.Category != result.ConfirmedFailure) {
			t.Errorf("none.exit3: reported %v, want confirmed_failure", cr.Reported)
		}
	}
}

// A tool that probes before its workload and cleans up after gets step
// cases on both sides of the workload, and the honest one passes them all:
// before the workload's request it reports local_failure with nothing
// started, after its exit status the workload's own result.
func TestStepCasesAroundTheWorkload(t *testing.T) {
	probing := sshrigtest.Func("uname-then-cleanup", func(ctx context.Context, t tool.Target) result.Result {
		pre, post := t, t
		pre.Command, post.Command = "uname -s", "true"
		if r := runReference(ctx, pre); !r.OK {
			r.Category, r.Retry = result.LocalFailure, result.Bounded
			return r
		}
		r := runReference(ctx, t)
		runReference(ctx, post)
		return r
	})
	rep, err := rig.Run(context.Background(), rig.Options{Tool: probing, Parallel: 4,
		StepCases: matrix.StepSelection{Globs: []string{"step.*"}, Required: []string{"step.*"}}})
	if err != nil {
		t.Fatal(err)
	}
	moments := map[fault.Moment]int{}
	for _, cr := range rep.Cases {
		moments[cr.Moment]++
		if cr.Verdict != report.Pass {
			t.Errorf("%s: %s %s %v", cr.ID, cr.Verdict, cr.Reason, cr.Violations)
		}
		if cr.Step == nil || !strings.HasPrefix(cr.ID, matrix.StepCasePrefix) {
			t.Errorf("%s: not a step case (step %v)", cr.ID, cr.Step)
		}
	}
	if moments[fault.PrepStep] == 0 || moments[fault.CleanupStep] == 0 || rep.Preflight.StepCases != len(rep.Cases) {
		t.Errorf("step cases by moment %v, %d of the preflight's %d run", moments, len(rep.Cases), rep.Preflight.StepCases)
	}
}

// A tool that does something else in a case than in its preflight (here a
// second probe it skipped the first time) makes that case inconclusive, and
// the reason names the first difference.
func TestConversationDiffersInconclusive(t *testing.T) {
	var calls atomic.Int32
	changing := sshrigtest.Func("changes-course", func(ctx context.Context, t tool.Target) result.Result {
		probe := t
		probe.Command = "uname -s"
		runReference(ctx, probe)
		if calls.Add(1) > 1 {
			runReference(ctx, probe)
		}
		return runReference(ctx, t)
	})
	cases, err := matrix.Select(matrix.DefaultMatrix(), []string{"none.exit0"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := rig.Run(context.Background(), rig.Options{Tool: changing, Cases: cases})
	if err != nil {
		t.Fatal(err)
	}
	cr := rep.Cases[0]
	if cr.Verdict != report.Inconclusive || !strings.Contains(cr.Reason, "conversation differs") || !strings.Contains(cr.Reason, "after the preflight's last request (exec), this case sent connection (step 7)") {
		t.Errorf("none.exit0: %s %q, want inconclusive naming the first difference (its second connection)", cr.Verdict, cr.Reason)
	}
	if len(rep.Preflight.Conversation) == 0 {
		t.Error("the preflight records no conversation")
	}
}

// runReference runs the rig's honest client once and returns its result.
func runReference(ctx context.Context, t tool.Target) result.Result {
	var out strings.Builder
	tools.Reference{}.Run(ctx, t, &out, &strings.Builder{})
	r, err := result.Parse([]byte(out.String()))
	if err != nil {
		panic(err)
	}
	return r
}
