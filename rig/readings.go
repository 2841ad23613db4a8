package rig

import (
	"fmt"
	"time"

	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/reading"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

// A tool read by a reading (Options.Reading) reports in its own terms: its
// exit code, its signal, its output. The reading turns each case run's
// report into a result (readResult), and, once every case ran, the run
// finds the native values that stood for honest answers calling for
// different next actions (markAmbiguous): those cases fail with
// ambiguous_report, a verdict on the tool's interface.

// readResult is what the tool reported, as a result: the result it
// printed, or, with a reading, its own report read into one, and the
// native value it became.
func (r *runner) readResult(run *caseRun) (read verdict.Reading, native string) {
	tr := run.tr
	if r.o.Reading == nil {
		return verdict.ReadResult(tr.stdout, tr.stdoutBytes), ""
	}
	rep := reading.Report{Stdout: tr.stdout, Stderr: tr.stderr}
	if tr.answer != nil {
		if tr.answer.Call == nil {
			return verdict.Reading{Err: fmt.Errorf("%w (reading %s): the MCP server gave no tool result", reading.ErrUnread, r.o.Reading.Name)}, ""
		}
		rep.MCP = tr.answer.Call
	}
	if tr.exit != nil {
		rep.Signal = tr.exit.Signal
		rep.Exited = tr.exit.Signal == "" && tr.exit.ExitCode >= 0
		rep.ExitCode = tr.exit.ExitCode
	}
	o, err := r.o.Reading.Read(rep)
	if err != nil {
		return verdict.Reading{Err: err}, ""
	}
	res := o.Result(run.c.Operation, run.id)
	return verdict.Reading{Result: &res}, o.Rule
}

// notApplicable names the checks a read tool's report cannot meet.
func (r *runner) notApplicable() []string {
	if r.o.Reading == nil {
		return nil
	}
	return []string{report.AssertEvidence + "/" + verdict.RuleCorrelationID + ": the tool's own report carries no correlation id or operation (read by reading " + r.o.Reading.Name + ")"}
}

// markAmbiguous finds, across the run's judged case runs, the native
// values that stood for honest answers calling for different next actions,
// fails each case run where one stood with ambiguous_report, logs that
// decision and puts it in the case run's transcript, and counts the run
// again.
func (r *runner) markAmbiguous(rep *report.Report, started time.Time) {
	var seen []reading.Seen
	for _, c := range rep.Cases {
		if groupedByNative(c) {
			seen = append(seen, reading.Seen{Case: c.ID, Native: c.Native,
				Honest: reading.Answer{Category: c.Expected.Category, Retry: c.Expected.Retry}})
		}
	}
	amb := reading.Ambiguities(seen)
	rep.Reading, rep.Ambiguities = r.o.Reading.Name, amb
	if len(amb) == 0 {
		return
	}
	byNative := map[string]reading.Ambiguity{}
	for _, a := range amb {
		byNative[a.Native] = a
	}
	for i := range rep.Cases {
		c := &rep.Cases[i]
		a, ok := byNative[c.Native]
		if !ok || !groupedByNative(*c) {
			continue
		}
		c.Verdict = report.Fail
		c.Violations = append(c.Violations, report.Violation{Assertion: report.AssertCategory, Rule: verdict.RuleAmbiguous, Detail: a.Detail()})
		r.logVerdictAs(c.CorrelationID, *c, map[string]any{"ambiguous": a.Native})
		if r.o.Out != nil {
			r.o.Out.amendTranscript(*c)
		}
	}
	rep.Summary = report.Summarize(rep.Cases, time.Since(started))
}

// groupedByNative says whether a case run counts in the ambiguity of its
// native value: it was judged (pass or fail), and its honest answer is not
// about the operation's own output contract (C04, malformed_response),
// which the caller's parse of the output judges, not the tool's signal (an
// exit 0 over a broken answer is unexpected_category, not an ambiguity).
func groupedByNative(c report.CaseReport) bool {
	return (c.Verdict == report.Pass || c.Verdict == report.Fail) && c.Expected.Category != result.MalformedResponse
}
