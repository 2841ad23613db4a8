package sshrigtest_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/sshrigtest"
	"github.com/sshrig/sshrig/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reference is the rig's honest client as a Go function tool.
var reference = sshrigtest.Func("reference-func", func(ctx context.Context, t tool.Target) result.Result {
	var out strings.Builder
	tools.Reference{}.Run(ctx, t, &out, &strings.Builder{})
	r, err := result.Parse([]byte(out.String()))
	if err != nil {
		panic(err)
	}
	return r
})

func TestRunPassesAnHonestFuncTool(t *testing.T) {
	h := sshrigtest.New(t)
	rep := h.Run(t, reference, "started.reset.*", "none.*", "accept.kill-helper.survive")
	if rep == nil {
		t.Fatal("no report")
	}
	want := map[string]rig.Verdict{"started.reset.survive": rig.Pass, "none.exit0": rig.Pass, "none.exit3": rig.Pass,
		"accept.kill-helper.survive": rig.Skipped}
	for _, cr := range rep.Cases {
		if w, ok := want[cr.ID]; ok && cr.Verdict != w {
			t.Errorf("%s: %s, want %s", cr.ID, cr.Verdict, w)
		}
	}
}

func TestRunCaseExplainsADefect(t *testing.T) {
	liar, err := tools.Lookup("mutant:lost-status-is-success")
	if err != nil {
		t.Fatal(err)
	}
	h := sshrigtest.New(t)
	c := rig.Case{ID: "started.reset.survive", Moment: fault.Started, Cut: fault.Reset}
	cr := h.RunCase(t, liar, c)
	if cr.Verdict != rig.Fail {
		t.Fatalf("verdict %s, want fail:\n%s", cr.Verdict, sshrigtest.Explain(cr))
	}
	msg := sshrigtest.Explain(cr)
	for _, want := range []string{"reported: succeeded/", "honest:   outcome_unknown/reconcile_first", "remotely: completed",
		"violation: " + rig.AssertCategory + "/unsafe_category"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Explain lacks %q:\n%s", want, msg)
		}
	}
}

func TestRunCaseRejectsAnInvalidCase(t *testing.T) {
	// A case built in Go gets the checks a matrix file's case gets.
	c := rig.Case{ID: "none.reset", Moment: fault.None, Cut: fault.Reset}
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
	run := func(ctx context.Context, t tool.Target) result.Result {
		var out strings.Builder
		tools.Reference{}.Run(ctx, t, &out, &strings.Builder{})
		r, err := result.Parse([]byte(out.String()))
		if err != nil {
			panic(err)
		}
		return r
	}
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
