package sshrigtest_test

import (
	"fmt"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/sshrigtest"
)

// A judgement prints as a failed matrix subtest does (Explain), then names
// the operation's evidence file, which is kept when the test fails.
func ExampleJudgement_String() {
	j := sshrigtest.Judgement{
		Name: "started.reset.hangup", Verdict: sshrigtest.Fail, Grade: sshrigtest.Unsafe,
		Reported: &result.Result{Category: result.ConfirmedFailure, Retry: result.Never, Message: "exit status missing"},
		Expected: sshrigtest.Expected{Category: result.OutcomeUnknown, Retry: result.ReconcileFirst},
		Truth: sshrigtest.Truth{TruthReport: reconcile.TruthReport{State: reconcile.Started, Starts: 1},
			Disposition: fault.Hangup, Landed: true, Evidence: "/tmp/sshrigtest-server-1/c-1.json"},
		Violations: []sshrigtest.Violation{{Assertion: "category", Rule: "unsafe_category",
			Detail: "reported confirmed_failure/never, but no exit status arrived"}},
	}
	fmt.Println(j)
	// Output:
	// started.reset.hangup: fail (unsafe)
	//   reported: confirmed_failure/never "exit status missing"
	//   honest:   outcome_unknown/reconcile_first
	//   remotely: started (1 start, 0 complete marker(s))
	//   violation: category/unsafe_category: reported confirmed_failure/never, but no exit status arrived
	//   evidence: /tmp/sshrigtest-server-1/c-1.json
}

// A truth in one line, as a failed assertion on it prints it.
func ExampleTruth_String() {
	exit := 3
	t := sshrigtest.Truth{TruthReport: reconcile.TruthReport{State: reconcile.Completed, Starts: 1, Completes: 1, ExitCode: &exit},
		Disposition: fault.Survive, Landed: true}
	fmt.Println(t)
	// Output:
	// completed (1 start, 1 complete marker(s), exit 3); disposition survive; the cut landed
}
