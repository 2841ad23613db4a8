package verdict

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
)

// Status is a case's outcome.
type Status string

const (
	Pass         Status = "pass"
	Fail         Status = "fail"
	Inconclusive Status = "inconclusive" // the rig could not establish what it needed
	Skipped      Status = "skipped"      // the case cannot apply to the tool
)

// Grade is how a reported category and retry compare with what the caller
// could know.
type Grade string

const (
	Exact        Grade = "exact"
	Conservative Grade = "conservative" // safe, but claims less than could be known
	Unsafe       Grade = "unsafe"       // claims more than could be known, or invites a blind retry
)

// Assertion names.
const (
	AssertCategory = "category"
	AssertNoBlind  = "no_blind_retry"
	AssertRemote   = "remote_state"
	AssertEvidence = "evidence"
)

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
)

// Violation is one finding against the tool.
type Violation struct {
	Assertion string `json:"assertion"`
	Rule      string `json:"rule"`
	Detail    string `json:"detail"`
}

func (v Violation) String() string { return v.Assertion + "/" + v.Rule + ": " + v.Detail }

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

	CorrelationID string
	Operation     string

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
	Status Status `json:"verdict"`
	// Expected is the honest category and retry the case called for.
	Expected   Expectation    `json:"expected"`
	Grade      Grade          `json:"grade,omitempty"`
	Reported   *result.Result `json:"reported"`
	ParseError string         `json:"parse_error,omitempty"`
	Reason     string         `json:"reason,omitempty"` // why inconclusive or skipped
	Violations []Violation    `json:"violations"`
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
	return Verdict{Status: Skipped, Reason: reason, Violations: []Violation{}}
}

// Judge applies the four assertions.
func Judge(in Input) Verdict {
	v := Verdict{Violations: []Violation{}}
	add := func(assertion, rule, format string, args ...any) {
		v.Violations = append(v.Violations, Violation{assertion, rule, fmt.Sprintf(format, args...)})
	}

	// Assertion 2, the part that needs no result: a tool must return, and
	// leave nothing running behind it.
	if in.Hung {
		add(AssertNoBlind, RuleHang, "no result within the deadline budget of %s (plus grace); a hang under a dead transport is a defect", in.Budget)
	}
	if len(in.LeftRunning) > 0 {
		add(AssertNoBlind, RuleLeftRunning, "the tool exited but left %d process(es) of its group running or holding its output open (pids %v); the rig killed them", len(in.LeftRunning), in.LeftRunning)
	}

	v.Expected = Expected(in)
	read := in.Read
	if read == nil {
		rd := ReadResult(in.Stdout, in.StdoutBytes)
		read = &rd
	}
	var r result.Result
	err := read.Err
	if err != nil {
		if !in.Hung || len(bytes.TrimSpace(in.Stdout)) > 0 {
			v.ParseError = err.Error()
			add(AssertCategory, RuleMalformedResult, "%v", err)
		}
	} else {
		r = *read.Result
		v.Reported = &r
	}

	// Assertion 2 for step sequences: each next action must follow from
	// what the tool knew, even if the task ends well.
	stepsDone := false
	if in.Steps != nil {
		var problem string
		v.Path, stepsDone, problem = CheckSteps(in.Steps, in.FirstUnknown)
		if problem != "" {
			add(AssertNoBlind, RuleTransition, "%s", problem)
		}
	}

	// Assertion 1. A step sequence that looked before it acted and finished
	// its task knows it succeeded, whatever the moment of the first cut.
	if v.Reported != nil && in.Landed && stepsDone && r.Category == result.Succeeded && r.Retry == result.Never {
		v.Grade = Exact
	} else if v.Reported != nil && in.Landed {
		knowledge, delivered := knowledgeOf(in)
		grade, why := GradeReport(knowledge, delivered, in.Expect, r.Category, r.Retry)
		if grade == Unsafe && relayed(in) {
			// The killed helper may have passed the status on before it
			// died: a ControlMaster hands it to its multiplexed client as
			// soon as it reads it. A report of exactly that status is then
			// knowledge, not a guess (a guess fails the other exit code).
			if g, _ := GradeReport(fault.ResultReceived, delivered, nil, r.Category, r.Retry); g == Exact {
				grade, why = Exact, ""
			}
		}
		v.Grade = grade
		if grade == Unsafe {
			rule := RuleUnsafeCategory
			if in.Expect != nil {
				rule = RuleUnexpected
			}
			add(AssertCategory, rule, "%s", why)
		}
	}

	// Assertion 2: one execution per correlation id unless reconciled.
	switch {
	case in.Attempts > 1 && !in.ProbedBetween:
		add(AssertNoBlind, RuleBlindRetry, "the command was sent %d times for %s with no reconcile probe in between that found it not started", in.Attempts, in.CorrelationID)
	case in.Attempts > 1 && in.Truth != nil && in.Truth.Starts > 1:
		// Whatever the probe said, the command ran more than once.
		add(AssertNoBlind, RuleBlindRetry, "the command was sent %d times for %s and started %d times: the retry ran work that had already begun", in.Attempts, in.CorrelationID, in.Truth.Starts)
	}

	if in.FollowUps > 0 {
		add(AssertNoBlind, RuleFollowUp, "after an answer that breaks the operation's contract the tool ran %d more command(s) on the server, built on a value it could not trust", in.FollowUps)
	}
	if in.CredentialRetries > 0 {
		add(AssertNoBlind, RuleRetryRejected, "the tool tried the rejected credential again %d more time(s); a rejected credential needs an authorised recovery path, not a retry", in.CredentialRetries)
	}

	// Assertion 4.
	if v.Reported != nil {
		if r.CorrelationID != in.CorrelationID {
			add(AssertEvidence, RuleCorrelationID, "result carries correlation_id %q, the rig gave %q", r.CorrelationID, in.CorrelationID)
		}
		if in.Operation != "" && r.Operation != in.Operation {
			add(AssertEvidence, RuleOperation, "result carries operation %q, the rig gave %q", r.Operation, in.Operation)
		}
	}
	if in.Log != nil {
		if !in.Log.CorrelationID {
			add(AssertEvidence, RuleLogMissing, "the event log holds no entry with correlation id %s", in.CorrelationID)
		} else if !in.Log.Result {
			add(AssertEvidence, RuleLogMissing, "the event log has no result event for %s: the history does not record what was observed", in.CorrelationID)
		}
	}
	// The server's own record against the tool's report: a command the
	// server saw start cannot have failed before it was sent, nor have
	// failed by a result that was never delivered.
	if v.Reported != nil && in.Truth != nil && in.Truth.Agree() && in.Truth.Starts > 0 {
		switch {
		case r.Category == result.LocalFailure:
			add(AssertEvidence, RuleContradiction, "the server saw the command start; the tool says local_failure (nothing sent)")
		case r.Category == result.ConfirmedFailure && in.Delivered == nil && in.RetryDelivered == nil:
			add(AssertEvidence, RuleContradiction, "the server saw the command start and delivered no exit status; the tool says confirmed_failure")
		}
	}
	for _, s := range in.Secrets {
		for _, where := range []struct {
			name string
			b    []byte
		}{{"stdout (the result)", in.Stdout}, {"stderr", in.Stderr}} {
			if s.ResultOnly && where.name == "stderr" {
				continue
			}
			if len(s.Data) > 0 && bytes.Contains(where.b, s.Data) {
				add(AssertEvidence, RuleSecret, "the %s appears in %s", s.Name, where.name)
			}
		}
	}

	// Assertion 3 and the rig's own limits decide between pass and inconclusive.
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
	case len(v.Violations) > 0:
		v.Status = Fail
	case len(unknown) > 0:
		v.Status = Inconclusive
		v.Reason = strings.Join(unknown, "; ")
	default:
		v.Status = Pass
	}
	if len(unknown) > 0 && v.Status == Fail {
		v.Reason = strings.Join(unknown, "; ")
	}
	return v
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
// result arrived, of that result: a reconciled retry's, or that of an
// attempt made after a cut where nothing had been sent.
func knowledgeOf(in Input) (fault.Knowledge, *Delivered) {
	k := fault.KnowledgeAt(in.Moment, in.Cut)
	switch {
	case in.Expect != nil:
	case in.ProbedBetween && in.Attempts > 1 && in.RetryDelivered != nil:
		return fault.ResultReceived, in.RetryDelivered
	case k == fault.NothingSent && in.FreshDelivered != nil:
		return fault.ResultReceived, in.FreshDelivered
	}
	return k, in.Delivered
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
	return in.Moment == fault.ExitStatus && in.Cut == fault.KillHelper && in.Delivered != nil
}

// GradeReport compares a reported category and retry with what the caller could know.
func GradeReport(k fault.Knowledge, d *Delivered, expect *Expectation, cat result.Category, retry result.Retry) (Grade, string) {
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
			return Exact, ""
		case cat == expect.Category && expect.Retry == result.Never:
			return Unsafe, fmt.Sprintf("reported %s: right category, but the only safe instruction is never", reported)
		case cat == expect.Category:
			return Conservative, ""
		}
		return Unsafe, fmt.Sprintf("reported %s, the evidence says %s/%s", reported, expect.Category, expect.Retry)
	}
	switch k {
	case fault.NothingSent:
		switch {
		case cat == result.LocalFailure && in(retry, result.Bounded, result.AfterDelay):
			return Exact, ""
		case cat == result.LocalFailure, cat == result.OutcomeUnknown && in(retry, result.ReconcileFirst, result.Never):
			return Conservative, ""
		case cat == result.OutcomeUnknown:
			return Unsafe, fmt.Sprintf("reported %s: an unknown outcome must not be retried without reconciling", reported)
		}
		return Unsafe, fmt.Sprintf("reported %s, but nothing was sent and the server answered nothing (honest: local_failure)", reported)
	case fault.RequestSent:
		switch {
		case cat == result.OutcomeUnknown && retry == result.ReconcileFirst:
			return Exact, ""
		case cat == result.OutcomeUnknown && retry == result.Never:
			return Conservative, ""
		case cat == result.OutcomeUnknown:
			return Unsafe, fmt.Sprintf("reported %s: the command may have run, so retrying before reconciling may run it twice", reported)
		}
		return Unsafe, fmt.Sprintf("reported %s, but the request was sent and no result came back: the caller cannot know (honest: outcome_unknown/reconcile_first)", reported)
	}
	honest, _ := Honest(k, d)
	switch {
	case cat == honest && honest == result.Succeeded && retry == result.Never:
		return Exact, ""
	case cat == honest && honest == result.Succeeded && retry == result.ReconcileFirst:
		return Conservative, ""
	case cat == honest && honest == result.Succeeded:
		return Unsafe, fmt.Sprintf("reported %s: retrying work that succeeded runs it twice", reported)
	case cat == honest && retry == result.ReconcileFirst:
		return Conservative, ""
	case cat == honest:
		return Exact, ""
	case cat == result.OutcomeUnknown && in(retry, result.ReconcileFirst, result.Never):
		return Conservative, ""
	}
	return Unsafe, fmt.Sprintf("reported %s, but the server delivered %s (honest: %s)", reported, d.describe(), honest)
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
