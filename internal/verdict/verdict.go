package verdict

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

// The judge speaks the report's vocabulary (report.Verdict, report.Grade,
// report.Violation and the assertion names): it is defined there, once.

// Rules: what exactly an assertion found.
const (
	RuleMalformedResult = "malformed_result"
	RuleUnsafeCategory  = "unsafe_category"
	RuleUnexpected      = "unexpected_category"
	RuleBlindRetry      = "blind_retry"
	RuleHang            = "hang"
	RuleLeftRunning     = "left_running"
	RuleFollowUp        = "follow_up_on_guess"
	RuleLogMissing      = "log_missing"
	RuleRetryRejected   = "retry_after_rejection"
	RuleCorrelationID   = "correlation_id"
	RuleOperation       = "operation"
	RuleSecret          = "secret"
	RuleContradiction   = "contradiction"
	RuleHostKeyIgnored  = "host_key_ignored"
	// RuleAmbiguous: the tool's own report (read by a reading) stood, across
	// the run, for honest answers that call for different next actions.
	RuleAmbiguous = "ambiguous_report"
	// RulePartialUpload: the tool reports success while an upload it sent
	// was cut and left a partial file on the host (Input.Upload).
	RulePartialUpload = "partial_upload_claimed"
)

// Delivered is the result the server delivered before the cut, for moments
// at which the caller received one.
type Delivered struct {
	ExitCode int
	Signal   string // set when the command was killed by a signal
}

// Expectation overrides the honest category and retry a moment implies, for
// cases whose honest answer is not about a transport cut (a rejected
// credential, a refusal, a malformed answer).
type Expectation struct {
	Category result.Category
	Retry    result.Retry
}

// Input is the evidence for one case run.
type Input struct {
	Moment fault.Moment
	Cut    fault.Cut
	// Delivered is what the server sent when the moment is after the result
	// reached the caller or its helper (exit-status, none); nil otherwise.
	Delivered *Delivered
	// Expect, when set, replaces the moment's honest category and retry.
	Expect *Expectation
	// Knowledge, when set, is what the caller could know at the cut as
	// what crossed the wire says it (engine.Evidence.VerdictInput), which
	// can be more than the moment's name says: a client that pipelines its
	// requests had sent the workload's before a cut "after env". Zero: the
	// moment's (fault.KnowledgeAt).
	Knowledge fault.Knowledge

	CorrelationID string
	Operation     string
	// NoEcho: the result was read from the tool's own report by a reading;
	// the tool echoes no correlation id or operation, so those checks do
	// not apply (they are not passed either).
	NoEcho bool

	// What the tool produced. StdoutBytes is how much it printed in all,
	// when Stdout holds only the first part. Read, when not nil, is
	// Stdout already read with ReadResult (the caller logged it); Judge
	// reads it otherwise.
	Stdout, Stderr []byte
	StdoutBytes    int64
	Read           *Reading
	// ExitCode is what the workload was made to exit with: the expected
	// result, where one arrives, when the server's events show none.
	ExitCode int
	Duration time.Duration
	Budget   time.Duration // the deadline the tool was given
	Hung     bool          // no return within Budget plus the rig's grace
	// NoConnection: no connection of the tool's reached the server during
	// the case. A hang then happened on a working transport.
	NoConnection bool
	// OutputDelivered: the workload ran nested in a wrapper of the tool's
	// that captured its output (reconcile.Process.OutputCaptured) and
	// finished, and everything the server wrote before the cut reached
	// the tool: a status its wrapper printed in the output is knowledge, so
	// a report of the workload's own exit code is exact (never unsafe),
	// though no exit status arrived.
	OutputDelivered bool
	// HostKeyIgnored, for a case whose server presents a host key that is
	// not the one the tool was told to expect, says how far the tool went
	// with that host anyway (evidence.Case.PastKeyExchange); "" when it
	// stopped at the key exchange.
	HostKeyIgnored string
	// LeftRunning lists processes the tool's program left running (or
	// holding its output open) after it exited; the rig killed them.
	LeftRunning []int

	// What the rig established.
	Landed    bool
	NotLanded string
	Truth     *reconcile.Truth // nil when the probes failed
	TruthErr  string
	// Attempts is how many exec requests carrying the correlation id's
	// markers reached the server; ProbedBetween says each attempt after the
	// first was reconciled: a probe ran before it, when no earlier request
	// could still start the command.
	Attempts      int
	ProbedBetween bool
	// RetryDelivered, for a reconciled retry (ProbedBetween with more than
	// one attempt), is what the server delivered to the last attempt: the
	// tool then knows how the retry ended. nil when nothing was delivered.
	RetryDelivered *Delivered
	// OperationIDs is, for each attempt that arrived as a marker-wrapped
	// exec request, the operation id set in front of it ("" for none), as
	// the wire says (evidence.Case.OperationIDs). With the ledger's ids
	// (reconcile.Truth.Operations) it says whether the attempts were one
	// operation sent again under one id (sameOperation).
	OperationIDs []string
	// ResendDelivered, where more than one attempt reached the server, is
	// what the server delivered to the last one when that attempt ran the
	// work itself (evidence.Case.ResendDelivered): sent again under the
	// operation id of a first attempt that never ran it, the tool then
	// knows how the work's one run ended. nil otherwise.
	ResendDelivered *Delivered
	// FreshDelivered, for a cut where nothing had been sent, is what the
	// server delivered to an attempt the tool made afterwards (it
	// reconnected: a ControlMaster's client falls back to a connection of
	// its own when the master dies). Nothing of the workload had left at
	// the cut, so that attempt is the first, and the tool knows how it
	// ended. nil when nothing was delivered.
	FreshDelivered *Delivered
	// FollowUps counts commands the tool ran after an answer whose contract
	// it could not trust (set only for such cases).
	FollowUps int
	// CredentialRetries counts connections, after the first, on which the
	// server rejected the same case's credential again.
	CredentialRetries int

	Secrets []secret.Secret

	// Log says what the run's event log holds for the correlation id, when
	// the run keeps one (nil: no log, nothing to check).
	Log *LogRecord

	// Upload, for a step case that cut an upload, is what the cut left on
	// the host (evidence.Case.Upload); nil otherwise.
	Upload *report.Upload

	// Steps, for a step-sequence case, are the operations the tool ran on
	// the server; FirstUnknown says the first create's result never reached
	// it (the cut landed during it).
	Steps        []Step
	FirstUnknown bool
}

// LogRecord is what the event log holds for one case run.
type LogRecord struct {
	CorrelationID bool // an entry carries the correlation id
	Result        bool // the observed result was logged
}

// Verdict is the judgement of one case run.
type Verdict struct {
	Status report.Verdict `json:"verdict"`
	// Expected is the honest category and retry the case called for.
	Expected   Expectation        `json:"expected"`
	Grade      report.Grade       `json:"grade,omitempty"`
	Reported   *result.Result     `json:"reported"`
	ParseError string             `json:"parse_error,omitempty"`
	Reason     string             `json:"reason,omitempty"` // why inconclusive or skipped
	Violations []report.Violation `json:"violations"`
	// Path is a step-sequence case's operations with what the tool knew
	// between them, e.g. "create -> outcome_unknown -> lookup -> found -> attach_note".
	Path string `json:"steps,omitempty"`
}

// Caught reports whether a violation of the assertion was found.
func (v Verdict) Caught(assertion string) bool {
	for _, x := range v.Violations {
		if x.Assertion == assertion {
			return true
		}
	}
	return false
}

// Skip is the verdict for a case that cannot apply to the tool.
func Skip(reason string) Verdict {
	return Verdict{Status: report.Skipped, Reason: reason, Violations: []report.Violation{}}
}

// Judge applies the four assertions.
func Judge(in Input) Verdict {
	j := &judging{in: in, v: Verdict{Violations: []report.Violation{}}}
	j.returned()
	j.readReport()
	stepsDone := j.steps()
	j.category(stepsDone)
	j.retries()
	j.evidence()
	j.secrets()
	j.decide()
	return j.v
}

// judging is one Judge call: its input, the verdict it builds, and the
// result the tool reported (zero when none could be read).
type judging struct {
	in Input
	v  Verdict
	r  result.Result
}

func (j *judging) add(assertion, rule, format string, args ...any) {
	j.v.Violations = append(j.v.Violations, report.Violation{Assertion: assertion, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// returned: assertion 2, the part that needs no result: a tool must
// return, and leave nothing running behind it.
func (j *judging) returned() {
	in := j.in
	switch {
	case in.Hung && in.NoConnection && in.Moment != fault.Refuse && (!in.Moment.HasCut() || !in.Landed):
		// Nothing died under the tool (refuse is the rig refusing it):
		// speaking of a dead transport would send its author looking for
		// a fault that never happened.
		j.add(report.AssertNoBlind, RuleHang, "no result within the deadline budget of %s (plus grace): the tool made no connection within its budget and nothing was cut", in.Budget)
	case in.Hung:
		j.add(report.AssertNoBlind, RuleHang, "no result within the deadline budget of %s (plus grace); a hang under a dead transport is a defect", in.Budget)
	}
	if len(in.LeftRunning) > 0 {
		j.add(report.AssertNoBlind, RuleLeftRunning, "the tool exited but left %d process(es) of its group running or holding its output open (pids %v); the rig killed them", len(in.LeftRunning), in.LeftRunning)
	}
}

// readReport reads the tool's result and what an honest one would say.
func (j *judging) readReport() {
	in := j.in
	j.v.Expected = Expected(in)
	read := in.Read
	if read == nil {
		rd := ReadResult(in.Stdout, in.StdoutBytes)
		read = &rd
	}
	err := read.Err
	if err != nil {
		if !in.Hung || len(bytes.TrimSpace(in.Stdout)) > 0 {
			j.v.ParseError = err.Error()
			j.add(report.AssertCategory, RuleMalformedResult, "%v", err)
		}
	} else {
		j.r = *read.Result
		j.v.Reported = &j.r
	}
}

// steps: assertion 2 for step sequences: each next action must follow from
// what the tool knew, even if the task ends well. It reports whether the
// sequence finished its task.
func (j *judging) steps() bool {
	in := j.in
	stepsDone := false
	if in.Steps != nil {
		var problem string
		j.v.Path, stepsDone, problem = CheckSteps(in.Steps, in.FirstUnknown)
		if problem != "" {
			j.add(report.AssertNoBlind, RuleTransition, "%s", problem)
		}
	}
	return stepsDone
}

// category: assertion 1. A step sequence that looked before it acted and
// finished its task knows it succeeded, whatever the moment of the first
// cut.
func (j *judging) category(stepsDone bool) {
	in, r := j.in, j.r
	if j.v.Reported != nil && in.Landed && stepsDone && r.Category == result.Succeeded && r.Retry == result.Never {
		j.v.Grade = report.Exact
	} else if j.v.Reported != nil && in.Landed {
		knowledge, delivered := knowledgeOf(in)
		grade, why := GradeReport(knowledge, delivered, in.Expect, r.Category, r.Retry)
		if grade == report.Unsafe && relayed(in) {
			// The killed helper may have passed the status on before it
			// died: a ControlMaster hands it to its multiplexed client as
			// soon as it reads it. A report of exactly that status is then
			// knowledge, not a guess (a guess fails the other exit code).
			if g, _ := GradeReport(fault.ResultReceived, delivered, nil, r.Category, r.Retry); g == report.Exact {
				grade, why = report.Exact, ""
			}
		}
		if grade == report.Unsafe && statusInOutput(in, r) {
			grade, why = report.Exact, ""
		}
		j.v.Grade = grade
		if grade == report.Unsafe {
			rule := RuleUnsafeCategory
			if in.Expect != nil {
				rule = RuleUnexpected
			}
			j.add(report.AssertCategory, rule, "%s", why)
		}
	}
}

// statusInOutput reports whether r is the workload's own exit code as the
// output that reached the tool could say it (Input.OutputDelivered): the
// ledger's, since the session's exit code is a wrapper's.
func statusInOutput(in Input, r result.Result) bool {
	if !in.OutputDelivered || in.Truth == nil || !in.Truth.Agree() || in.Truth.State != reconcile.Completed || in.Truth.ExitCode == nil {
		return false
	}
	g, _ := GradeReport(fault.ResultReceived, &Delivered{ExitCode: *in.Truth.ExitCode}, nil, r.Category, r.Retry)
	return g == report.Exact
}

// retries: assertion 2: one execution per correlation id unless
// reconciled, nothing built on an untrusted answer, no rejected credential
// tried again.
func (j *judging) retries() {
	in := j.in
	switch {
	case in.Attempts > 1 && !in.ProbedBetween:
		// A retry the remote side de-duplicates by its operation id is
		// not blind: the tool made sure the work runs at most once.
		if same, why := sameOperation(in); !same {
			j.add(report.AssertNoBlind, RuleBlindRetry, "the command was sent %d times for %s with no reconcile probe in between that found it not started, and not as one operation the remote side de-duplicates: %s", in.Attempts, in.CorrelationID, why)
		}
	case in.Attempts > 1 && in.Truth != nil && in.Truth.Starts > 1:
		// Whatever the probe said, the command ran more than once.
		j.add(report.AssertNoBlind, RuleBlindRetry, "the command was sent %d times for %s and started %d times: the retry ran work that had already begun", in.Attempts, in.CorrelationID, in.Truth.Starts)
	}

	if in.FollowUps > 0 {
		j.add(report.AssertNoBlind, RuleFollowUp, "after an answer that breaks the operation's contract the tool ran %d more command(s) on the server, built on a value it could not trust", in.FollowUps)
	}
	if in.HostKeyIgnored != "" {
		// Nothing the tool did next could be trusted to have gone where it
		// meant: its credential, its command and any retry went to a host
		// nobody vouched for.
		j.add(report.AssertNoBlind, RuleHostKeyIgnored, "the server's host key is not the one in known_hosts and the tool went on: %s; a changed host key needs a person, not a connection", in.HostKeyIgnored)
	}
	if in.CredentialRetries > 0 {
		j.add(report.AssertNoBlind, RuleRetryRejected, "the tool tried the rejected credential again %d more time(s); a rejected credential needs an authorised recovery path, not a retry", in.CredentialRetries)
	}
}

// sameOperation says whether the attempts at the command were one operation
// sent again under one operation id, which the remote side ran at most once:
// every attempt the wire shows and every run the ledger shows carried the
// same id, and the work started at most once. Otherwise it says why not.
func sameOperation(in Input) (bool, string) {
	if in.Truth == nil {
		return false, "the remote state is unknown, so nothing shows the work ran at most once"
	}
	ids, without := in.Truth.Operations()
	for _, id := range in.OperationIDs {
		if id == "" {
			without = true
		} else if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		return false, "no attempt carried an operation id"
	case len(ids) > 1:
		return false, fmt.Sprintf("the attempts carried operation ids %s: a new id makes the retry a new operation, which nothing de-duplicates", strings.Join(ids, ", "))
	case without:
		return false, fmt.Sprintf("an attempt carried no operation id, another %s", ids[0])
	case in.Truth.Starts > 1:
		return false, fmt.Sprintf("the work started %d times under operation id %s", in.Truth.Starts, ids[0])
	}
	return true, ""
}

// evidence: assertion 4: the result and the log carry the case's id, and
// the tool's report does not contradict the server's own record.
func (j *judging) evidence() {
	in, r := j.in, j.r
	if j.v.Reported != nil && !in.NoEcho {
		if r.CorrelationID != in.CorrelationID {
			j.add(report.AssertEvidence, RuleCorrelationID, "result carries correlation_id %q, the rig gave %q", r.CorrelationID, in.CorrelationID)
		}
		if in.Operation != "" && r.Operation != in.Operation {
			j.add(report.AssertEvidence, RuleOperation, "result carries operation %q, the rig gave %q", r.Operation, in.Operation)
		}
	}
	if in.Log != nil {
		if !in.Log.CorrelationID {
			j.add(report.AssertEvidence, RuleLogMissing, "the event log holds no entry with correlation id %s", in.CorrelationID)
		} else if !in.Log.Result {
			j.add(report.AssertEvidence, RuleLogMissing, "the event log has no result event for %s: the history does not record what was observed", in.CorrelationID)
		}
	}
	// The server's own record against the tool's report: a command the
	// server saw start cannot have failed before it was sent, nor have
	// failed by a result that was never delivered.
	if j.v.Reported != nil && in.Truth != nil && in.Truth.Agree() && in.Truth.Starts > 0 {
		switch {
		case r.Category == result.LocalFailure:
			j.add(report.AssertEvidence, RuleContradiction, "the server saw the command start; the tool says local_failure (nothing sent)")
		case r.Category == result.ConfirmedFailure && in.Delivered == nil && in.RetryDelivered == nil && in.ResendDelivered == nil && !statusInOutput(in, r):
			j.add(report.AssertEvidence, RuleContradiction, "the server saw the command start and delivered no exit status; the tool says confirmed_failure")
		}
	}
	// The host's own record of an upload against the tool's report: a
	// file cut part-way is not an operation that succeeded, whatever ran
	// afterwards (a truncated script may even run and exit 0). A later
	// upload of the same name that finished put the file right.
	if j.v.Reported != nil && (r.OK || r.Category == result.Succeeded) && in.Upload.LeftPartial() {
		j.add(report.AssertEvidence, RulePartialUpload, "the tool says %s, but its upload was cut and left a partial file on the host: %s", r.Category, in.Upload)
	}
}

// secrets: assertion 4: nothing secret in what the tool printed.
func (j *judging) secrets() {
	in := j.in
	for _, s := range in.Secrets {
		for _, where := range []struct {
			name string
			b    []byte
		}{{"stdout (the result)", in.Stdout}, {"stderr", in.Stderr}} {
			if s.ResultOnly && where.name == "stderr" {
				continue
			}
			if len(s.Data) > 0 && bytes.Contains(where.b, s.Data) {
				j.add(report.AssertEvidence, RuleSecret, "the %s appears in %s", s.Name, where.name)
			}
		}
	}
}

// decide: assertion 3 and the rig's own limits decide between pass and
// inconclusive.
func (j *judging) decide() {
	in := j.in
	var unknown []string
	if !in.Landed {
		unknown = append(unknown, "the cut did not land: "+in.NotLanded)
	}
	switch {
	case in.Truth == nil:
		unknown = append(unknown, "remote state unknown: "+in.TruthErr)
	case !in.Truth.Agree():
		unknown = append(unknown, "remote state unknown: the ledger and the server disagree: "+in.Truth.Disagreement)
	}
	switch {
	case len(j.v.Violations) > 0:
		j.v.Status = report.Fail
	case len(unknown) > 0:
		j.v.Status = report.Inconclusive
		j.v.Reason = strings.Join(unknown, "; ")
	default:
		j.v.Status = report.Pass
	}
	if len(unknown) > 0 && j.v.Status == report.Fail {
		j.v.Reason = strings.Join(unknown, "; ")
	}
}

// Reading is what a tool's stdout held: its result, or why it holds none.
type Reading struct {
	Result *result.Result
	Err    error
}

// ReadResult reads a tool's stdout, of which total bytes were printed (more
// than len(stdout) when only the first part was kept).
func ReadResult(stdout []byte, total int64) Reading {
	r, err := result.Parse(stdout)
	if err != nil && total > int64(len(stdout)) {
		err = fmt.Errorf("%w: the tool printed %d bytes; a result is one object of at most %d", result.ErrTooLarge, total, result.MaxSize)
	}
	if err != nil {
		return Reading{Err: err}
	}
	return Reading{Result: &r}
}

// Expected is the category and retry an honest tool reports in the case in
// describes: the case's own expectation, or what the caller could know at its
// moment, with the result delivered to the workload (or, when the events
// show none, the one it was made to exit with).
func Expected(in Input) Expectation {
	if in.Expect != nil {
		return *in.Expect
	}
	k, d := knowledgeOf(in)
	if d == nil {
		d = &Delivered{ExitCode: in.ExitCode}
	}
	cat, retry := Honest(k, d)
	return Expectation{Category: cat, Retry: retry}
}

// knowledgeOf is what the tool could know, and the result it could hold:
// at the cut's moment, or, where the tool went on after the cut and a
// result arrived, of that result: a reconciled retry's, a resend's that ran
// the work once under the first attempt's operation id, or that of an
// attempt made after a cut where nothing had been sent.
func knowledgeOf(in Input) (fault.Knowledge, *Delivered) {
	k := in.Knowledge
	if k == 0 {
		k = fault.KnowledgeAt(in.Moment, in.Cut)
	}
	switch {
	case in.Expect != nil:
	case in.ProbedBetween && in.Attempts > 1 && in.RetryDelivered != nil:
		return fault.ResultReceived, in.RetryDelivered
	case !in.ProbedBetween && in.Attempts > 1 && in.ResendDelivered != nil && resent(in):
		return fault.ResultReceived, in.ResendDelivered
	case k == fault.NothingSent && in.FreshDelivered != nil:
		return fault.ResultReceived, in.FreshDelivered
	}
	return k, in.Delivered
}

// resent says the attempts were one operation sent again under its
// operation id (sameOperation).
func resent(in Input) bool {
	same, _ := sameOperation(in)
	return same
}

// Honest returns the category and retry an honest tool reports at a moment
// with knowledge k (and, once a result arrived, the delivered result).
func Honest(k fault.Knowledge, d *Delivered) (result.Category, result.Retry) {
	switch k {
	case fault.NothingSent:
		return result.LocalFailure, result.Bounded
	case fault.RequestSent:
		return result.OutcomeUnknown, result.ReconcileFirst
	}
	if d != nil && (d.ExitCode != 0 || d.Signal != "") {
		return result.ConfirmedFailure, result.Never
	}
	return result.Succeeded, result.Never
}

// relayed says the case killed the tool's helper after the server's exit
// status was delivered to it (in.Delivered), so the status may have reached
// the tool through the helper before the kill.
func relayed(in Input) bool {
	return in.Moment == fault.ExitStatus && in.Cut.HelperCut() && in.Delivered != nil
}

// GradeReport compares a reported category and retry with what the caller could know.
func GradeReport(k fault.Knowledge, d *Delivered, expect *Expectation, cat result.Category, retry result.Retry) (report.Grade, string) {
	in := func(r result.Retry, set ...result.Retry) bool {
		for _, x := range set {
			if r == x {
				return true
			}
		}
		return false
	}
	reported := fmt.Sprintf("%s/%s", cat, retry)
	if expect != nil {
		switch {
		case cat == expect.Category && retry == expect.Retry:
			return report.Exact, ""
		case cat == expect.Category && expect.Retry == result.Never:
			return report.Unsafe, fmt.Sprintf("reported %s: right category, but the only safe instruction is never", reported)
		case cat == expect.Category:
			return report.Conservative, ""
		}
		return report.Unsafe, fmt.Sprintf("reported %s, the evidence says %s/%s", reported, expect.Category, expect.Retry)
	}
	switch k {
	case fault.NothingSent:
		switch {
		case cat == result.LocalFailure && in(retry, result.Bounded, result.AfterDelay):
			return report.Exact, ""
		case cat == result.LocalFailure, cat == result.OutcomeUnknown && in(retry, result.ReconcileFirst, result.Never):
			return report.Conservative, ""
		case cat == result.OutcomeUnknown:
			return report.Unsafe, fmt.Sprintf("reported %s: an unknown outcome must not be retried without reconciling", reported)
		}
		return report.Unsafe, fmt.Sprintf("reported %s, but nothing was sent and the server answered nothing (honest: local_failure)", reported)
	case fault.RequestSent:
		switch {
		case cat == result.OutcomeUnknown && retry == result.ReconcileFirst:
			return report.Exact, ""
		case cat == result.OutcomeUnknown && retry == result.Never:
			return report.Conservative, ""
		case cat == result.OutcomeUnknown:
			return report.Unsafe, fmt.Sprintf("reported %s: the command may have run, so retrying before reconciling may run it twice", reported)
		}
		return report.Unsafe, fmt.Sprintf("reported %s, but the request was sent and no result came back: the caller cannot know (honest: outcome_unknown/reconcile_first)", reported)
	}
	honest, _ := Honest(k, d)
	switch {
	case cat == honest && honest == result.Succeeded && retry == result.Never:
		return report.Exact, ""
	case cat == honest && honest == result.Succeeded && retry == result.ReconcileFirst:
		return report.Conservative, ""
	case cat == honest && honest == result.Succeeded:
		return report.Unsafe, fmt.Sprintf("reported %s: retrying work that succeeded runs it twice", reported)
	case cat == honest && retry == result.ReconcileFirst:
		return report.Conservative, ""
	case cat == honest:
		return report.Exact, ""
	case cat == result.OutcomeUnknown && in(retry, result.ReconcileFirst, result.Never):
		return report.Conservative, ""
	}
	return report.Unsafe, fmt.Sprintf("reported %s, but the server delivered %s (honest: %s)", reported, d.describe(), honest)
}

func (d *Delivered) describe() string {
	switch {
	case d == nil:
		return "a result"
	case d.Signal != "":
		return "exit signal " + d.Signal
	}
	return fmt.Sprintf("exit status %d", d.ExitCode)
}
