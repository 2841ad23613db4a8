package tools

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/tool"
)

// minProbeTime is the least time left in the budget for which a tool still
// runs the case's reconcile probe: less cannot cover a fresh handshake on a
// loaded machine, and a tool must return within its budget.
const minProbeTime = 300 * time.Millisecond

// runReconcileProbe runs the case's reconcile probe (t.Reconcile) over a
// fresh connection, within what is left of the budget (until), and reads its
// answer. Without an answer, why says what went wrong.
func runReconcileProbe(ctx context.Context, t tool.Target, until time.Time, stderr io.Writer) (answer *reconcile.Answer, why string) {
	left := time.Until(until)
	if left < minProbeTime {
		return nil, fmt.Sprintf("no time left in the budget to run it (%s)", left.Round(time.Millisecond))
	}
	pt := t
	pt.Command, pt.Operation, pt.Deadline = t.Reconcile, "reconcile", left
	a := Client{}.Attempt(ctx, pt)
	fmt.Fprintf(stderr, "reconcile probe: phase=%s exit_received=%t exit=%d\n", a.Phase, a.ExitReceived, a.ExitCode)
	switch {
	case !a.ExitReceived && a.Err != nil:
		return nil, "it did not run to the end: " + a.Err.Error()
	case !a.ExitReceived:
		return nil, "it did not run to the end"
	case a.ExitSignal != "":
		return nil, "it was killed by SIG" + a.ExitSignal
	case a.ExitCode != 0:
		return nil, fmt.Sprintf("it exited %d", a.ExitCode)
	}
	ans, err := reconcile.ParseAnswer(a.Stdout)
	if err != nil {
		return nil, "its answer is not valid: " + err.Error()
	}
	return &ans, ""
}

// reconciledMessage adds what the probe said to an outcome_unknown message.
// The category and retry stay what the tool knew when the transport died:
// the planner, told what the probe found, decides what happens next.
func reconciledMessage(msg string, answer *reconcile.Answer, why string) string {
	if answer == nil {
		return msg + "; the reconcile probe gave no answer (" + why + "): inspect the remote state before anything else"
	}
	s := msg + "; reconcile probe says " + string(answer.State)
	if ev := strings.TrimSpace(answer.Evidence); ev != "" {
		s += " (" + ev + ")"
	}
	return s
}
