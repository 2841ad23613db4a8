package rig

import (
	"slices"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// caseRun is one case run's facts, gathered once as it runs (runner.execute):
// every input of its verdict (decide) and what its transcript shows.
type caseRun struct {
	c     matrix.Case
	id    string // the case run's correlation id
	start time.Time
	// skip says why the case cannot apply to the tool; broken, why the rig
	// could not take it to a verdict. Either ends the case before the rest
	// is known.
	skip, broken string
	// note remarks on a case that went on to its verdict (a tool slow to
	// stop once its case ended).
	note string
	t    tool.Target
	tr   toolRun
	ev   *engine.Evidence // nil when the case ended before the engine had evidence
	// evs is the server's events read for the case, once.
	evs     evidence.Case
	in      verdict.Input
	secrets []secret.Secret
	// conversationDiff says how the tool's conversation differs from the
	// preflight's; "" when it does not, or is not compared.
	conversationDiff string
	// native is the value a read tool's own report became (rig/readings.go).
	native string
	// hosts, for a case run on a fleet, is every host's (rig/fleet.go);
	// ev, evs and in are then the first cut host's, and topResult the
	// tool's result as it printed it, every host's entry in it.
	hosts     fleetRuns
	topResult *result.Result
}

// judged reports whether the case ran to a judgement of the evidence.
func (run *caseRun) judged() bool { return run.skip == "" && run.broken == "" }

// decision is a case run's verdict, as the report and the log carry it.
type decision struct {
	Verdict    report.Verdict
	Grade      report.Grade
	Reason     string
	Violations []report.Violation // redacted
	Expected   matrix.Expected
	Steps      string
	Reported   *result.Result     // redacted
	ParseError string             // redacted
	answered   []report.Violation // the tool's own findings among Violations
	Hosts      []report.HostReport
}

// decide is the one place a case run's verdict is decided. Its inputs are
// verdict.Judge's and every fact the rig found beside it: the case cannot
// apply (skipped) or could not be run (inconclusive), an Answerer's findings
// and the secrets in what its caller was shown, the marks of work carried
// across cases, and a conversation that differs from the preflight's. The
// report never carries key material, even when the tool printed it.
func decide(run *caseRun) decision {
	c := run.c
	d := decision{Violations: []report.Violation{}, Reason: run.note}
	if !run.judged() {
		e := verdict.Expected(verdict.Input{Moment: c.Moment, Cut: c.Cut, Expect: expectation(c), ExitCode: c.ExitCode})
		d.Expected = matrix.Expected{Category: e.Category, Retry: e.Retry}
		d.Verdict, d.Reason = report.Skipped, run.skip
		if run.broken != "" {
			d.Verdict, d.Reason = report.Inconclusive, run.broken
		}
		return d
	}
	if len(run.hosts) > 0 {
		return decideFleet(run) // rig/fleet.go
	}
	answer, secrets := run.tr.answer, run.secrets
	v := withAnswer(verdict.Judge(run.in), answer, secrets, run.tr.stdout)
	v = withAgent(v, answer, run.evs) // rig/agent.go
	v = withViolations(v, crossCase(run.evs, c, v.Reported))
	d.Expected = matrix.Expected{Category: v.Expected.Category, Retry: v.Expected.Retry}
	d.Verdict, d.Grade, d.Steps = v.Status, v.Grade, v.Path
	for _, x := range v.Violations {
		// Details quote what the tool printed (an id, a parse error).
		d.Violations = append(d.Violations, report.Violation{Assertion: x.Assertion, Rule: x.Rule,
			Detail: string(secret.Redact([]byte(x.Detail), secrets))})
		if answer != nil && slices.ContainsFunc(answer.Findings, func(f tool.Finding) bool { return f.Rule == x.Rule && f.Detail == x.Detail }) {
			d.answered = append(d.answered, d.Violations[len(d.Violations)-1])
		}
	}
	d.Reported = redactResult(v.Reported, secrets)
	d.ParseError = string(secret.Redact([]byte(v.ParseError), secrets))
	if v.Reason != "" {
		d.Reason = v.Reason
	}
	if run.conversationDiff != "" {
		d.Verdict, d.Grade, d.Violations = report.Inconclusive, "", []report.Violation{}
		d.Reason = "the tool's conversation differs from the preflight's, so the case's cut may not be where its moment says: " + run.conversationDiff
	}
	return d
}

// caseResult is a case run's record in the report, and what the preflight
// reads of the case run besides.
type caseResult struct {
	report.CaseReport
	diag            *diagnosis         // both sides' account, for the preflight's message
	answered        []report.Violation // the tool's own findings (tool.Answer), redacted, for the same
	workloadRequest int                // evidence.Case.WorkloadRequest, for the preflight
	conversation    []fault.Request    // evidence.Case.Conversation, for the preflight
	// cutMissed: inconclusive because the cut did not land for a reason
	// that rests on the schedule (engine.Evidence.MissedOnTiming), for
	// rig/confirm.go.
	cutMissed bool
	// hangStandsAlone: the tool hung with the machine's wait given back
	// (rig/machinewait.go), so alone it would have hung too.
	hangStandsAlone bool
}

// take puts the decision into the case's record.
func (cr *caseResult) take(d decision) {
	cr.Verdict, cr.Grade, cr.Reason, cr.Violations = d.Verdict, d.Grade, d.Reason, d.Violations
	cr.Expected, cr.Steps, cr.Reported, cr.ParseError, cr.answered = d.Expected, d.Steps, d.Reported, d.ParseError, d.answered
	cr.Hosts = d.Hosts
}
