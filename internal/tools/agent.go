package tools

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Agent is an agent-like tool: it carries out a small task — create a record,
// then attach a note to it — and decides each next step from what it learned.
// After a create whose outcome it cannot know, it looks the record up before
// anything else; it creates again only when the lookup says the record does
// not exist. With Recreate set it has the most common agent defect: it
// creates again straight away.
//
// Where the case names the operation's reconcile probe (Target.Reconcile),
// the agent asks it first: "not started" makes a second create a reconciled
// decision, "completed" sends it to the lookup for the record's id, and any
// other answer stops it with outcome_unknown.
//
// For cases without a step sequence (no Target.Lookup) it behaves as the
// reference tool.
type Agent struct {
	Recreate bool
}

// Name implements tool.Tool.
func (a Agent) Name() string {
	if a.Recreate {
		return MutantPrefix + "agent-recreates"
	}
	return "agent:reconciler"
}

// Run implements tool.Tool.
func (a Agent) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	if t.Lookup == "" || t.FollowUp == "" {
		Reference{}.Run(ctx, t, stdout, stderr)
		return
	}
	// Every step ends by nine tenths of the budget; the rest is for
	// reporting, and covers a last step's minimum.
	deadline := time.Now().Add(t.Deadline - t.Deadline/10)
	step := func(name, command string) Attempt {
		st := t
		st.Command = command
		if name != "create" {
			// Only the create's answer has create_record's contract; the
			// agent reads the lookup's answer itself.
			st.Operation = name
		}
		st.Deadline = max(time.Until(deadline), 100*time.Millisecond)
		at := Client{}.Attempt(ctx, st)
		fmt.Fprintf(stderr, "step %s: phase=%s exit_received=%t exit=%d\n", name, at.Phase, at.ExitReceived, at.ExitCode)
		return at
	}
	finish := func(a Attempt, cat result.Category, retry result.Retry, msg string) {
		writeReport(stdout, stderr, t, a, resultFor(t, cat, retry, msg))
	}

	// createAgain runs the create once more and reads the record's id; when
	// that create fails too, it reports and says so (ok false).
	createAgain := func(why string) (id string, ok bool) {
		fmt.Fprintln(stderr, why)
		again := step("create", t.Command)
		if cat, retry, msg := Classify(again); cat != result.Succeeded {
			finish(again, cat, retry, msg)
			return "", false
		}
		id, _ = operations.Check(operations.CreateRecord, again.Stdout)
		return id, true
	}

	created := step("create", t.Command)
	cat, retry, msg := Classify(created)
	var id string
	ok, probeSaidCompleted := false, false
	switch cat {
	case result.Succeeded:
		id, _ = operations.Check(operations.CreateRecord, created.Stdout)
	case result.OutcomeUnknown:
		if a.Recreate {
			if id, ok = createAgain("create: outcome unknown; creating again"); !ok {
				return
			}
			break
		}
		if t.Reconcile != "" {
			// The case names the operation's reconcile probe: ask it
			// first. Only "not started" makes a second create safe, and
			// only "completed" means there is a record to look up.
			answer, why := runReconcileProbe(ctx, t, deadline, stderr)
			if answer == nil || (answer.State != reconcile.AnswerNotStarted && answer.State != reconcile.AnswerCompleted) {
				finish(created, cat, retry, reconciledMessage(msg, answer, why)+"; no further step taken")
				return
			}
			if answer.State == reconcile.AnswerNotStarted {
				if id, ok = createAgain("reconcile probe: not started; creating"); !ok {
					return
				}
				break
			}
			// Completed: the lookup below reads the record's id.
			probeSaidCompleted = true
		}
		// Reconcile first: does the record exist?
		look := step("lookup", t.Lookup)
		if !look.ExitReceived || look.ExitCode != 0 {
			lc, lr, lm := Classify(look)
			finish(look, lc, lr, "the create's outcome is unknown and the lookup failed too: "+lm)
			return
		}
		found, err := operations.Check(operations.CreateRecord, look.Stdout)
		if err != nil && probeSaidCompleted {
			// The probe saw the create complete, the lookup finds no
			// record: the two disagree, and neither a create nor a note
			// is safe.
			finish(look, result.OutcomeUnknown, result.ReconcileFirst, msg+"; the reconcile probe says the create completed, but the lookup finds no record: no further step taken")
			return
		}
		if err != nil {
			// Not there: the create never ran. Creating now is a reconciled
			// decision, not a blind retry.
			if found, ok = createAgain("lookup: not found; creating"); !ok {
				return
			}
		}
		id = found
	default:
		finish(created, cat, retry, msg)
		return
	}
	if id == "" {
		finish(created, result.MalformedResponse, result.Never, "the record's id could not be read; no note attached")
		return
	}
	noted := step("attach_note", strings.ReplaceAll(t.FollowUp, "{id}", id))
	cat, retry, msg = Classify(noted)
	if cat == result.Succeeded {
		msg = "record " + id + " created and noted"
	}
	finish(noted, cat, retry, msg)
}
