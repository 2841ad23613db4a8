package sshrigtest_test

import (
	"fmt"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/sshrigtest"
)

// Explain is the message of a failed subtest.
func ExampleExplain() {
	exit := 0
	cr := report.CaseReport{
		ID: "started.reset.survive", Moment: fault.Started, Verdict: report.Fail, Grade: report.Unsafe,
		Reported: &result.Result{OK: true, Category: result.Succeeded, Retry: result.Never, Message: "done"},
		Expected: matrix.Expected{Category: result.OutcomeUnknown, Retry: result.ReconcileFirst},
		Truth:    &reconcile.TruthReport{State: reconcile.Completed, Starts: 1, Completes: 1, ExitCode: &exit},
		Violations: []report.Violation{{Assertion: report.AssertCategory, Rule: "unsafe_category",
			Detail: "reported succeeded/never, but no exit status arrived"}},
	}
	fmt.Println(sshrigtest.Explain(cr))
	// Output:
	// started.reset.survive: fail (unsafe)
	//   reported: succeeded/never "done"
	//   honest:   outcome_unknown/reconcile_first
	//   remotely: completed (1 start, 1 complete marker(s), exit 0)
	//   violation: category/unsafe_category: reported succeeded/never, but no exit status arrived
}
