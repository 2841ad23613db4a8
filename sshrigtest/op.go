package sshrigtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

// Op is one operation on a held Server: what Arm armed, the command to run
// for it, and, once your client has run it, what really happened (Truth)
// and what the rig makes of a report of it (Judge). Asking either ends the
// operation: the server ends its commands and connections, and reads the
// ledger.
type Op struct {
	srv         *Server
	run         *engine.Run
	id          string
	moment      fault.Moment
	cut         fault.Cut
	disposition fault.Disposition
	exitCode    int
	operation   string
	command     string

	once         sync.Once
	ev           *engine.Evidence // nil when the operation could not end
	err          error
	evidencePath string
}

// ID is the operation's correlation id: its markers' id, which a result
// must carry.
func (o *Op) ID() string { return o.id }

// Command is the shell command to run for the operation: the workload
// wrapped with the markers that write its start and completion to the
// server's ledger.
func (o *Op) Command() string { return o.command }

// Operation is the operation's name, which a result must carry.
func (o *Op) Operation() string { return o.operation }

// CutDone is closed once the cut at the armed moment happened (or failed)
// and the server went on. It never closes for fault.None, nor when the
// exchange never reached the moment. A test whose client waits on a
// blackholed transport can end that wait here instead of on a timer.
func (o *Op) CutDone() <-chan struct{} { return o.run.CutDone() }

// finish ends the operation once: it waits (at most the server's settle
// time) for its commands to end, reads the truth, ends the case on the
// server and writes the evidence file.
func (o *Op) finish() {
	o.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), o.srv.settle+time.Minute)
		defer cancel()
		o.ev, o.err = o.run.Finish(ctx, o.srv.settle)
		o.evidencePath = o.writeEvidence()
	})
}

// end makes the operation stop receiving connections, then finishes it.
func (o *Op) end() {
	o.srv.mu.Lock()
	if o.srv.current == o {
		o.srv.current = nil
	}
	o.srv.mu.Unlock()
	o.finish()
}

// Truth is what really happened to an operation, from the server's ledger
// (read over SSH after the operation ended) and its own process events.
type Truth struct {
	// State, the marker counts and the exit code of a completed command;
	// Disagreement is set when the ledger and the server's events
	// contradict each other. State is "" when the ledger could not be read
	// (Unknown says why).
	reconcile.TruthReport
	Unknown string `json:"unknown,omitempty"`
	// Disposition is what the remote command was told to do when its
	// transport died.
	Disposition fault.Disposition `json:"disposition"`
	// Landed: the cut happened at the armed moment (always true for
	// fault.None). NotLanded says why not.
	Landed    bool   `json:"landed"`
	NotLanded string `json:"not_landed,omitempty"`
	// Settled: every command the server ran for the operation had ended
	// when the ledger was read.
	Settled bool `json:"settled"`
	// Evidence is the operation's evidence file in the server's run
	// directory (kept when the test fails), or "".
	Evidence string `json:"evidence,omitempty"`
}

// String says what happened in one line, e.g. "started (1 start, 0
// complete marker(s)); disposition hangup; the cut landed".
func (t Truth) String() string {
	var b strings.Builder
	if t.State == "" {
		fmt.Fprintf(&b, "unknown (%s)", t.Unknown)
	} else {
		b.WriteString(remotely(&t.TruthReport))
	}
	fmt.Fprintf(&b, "; disposition %s", t.Disposition)
	if t.Landed {
		b.WriteString("; the cut landed")
	} else {
		b.WriteString("; the cut did not land: " + t.NotLanded)
	}
	if t.Evidence != "" {
		b.WriteString("; evidence " + t.Evidence)
	}
	return b.String()
}

// remotely is a truth as Explain words it.
func remotely(tr *reconcile.TruthReport) string {
	s := fmt.Sprintf("%s (%d start, %d complete marker(s)", tr.State, tr.Starts, tr.Completes)
	if tr.ExitCode != nil {
		s += fmt.Sprintf(", exit %d", *tr.ExitCode)
	}
	s += ")"
	if tr.Disagreement != "" {
		s += "; the ledger and the server disagree: " + tr.Disagreement
	}
	return s
}

// Truth ends the operation and returns what really happened remotely. Call
// it once your client code has returned, from the test's goroutine; when
// the operation could not end at all it stops the test.
func (o *Op) Truth() Truth {
	o.srv.t.Helper()
	o.mustEnd()
	t := Truth{Disposition: o.disposition, Landed: o.ev.Landed, NotLanded: o.ev.NotLanded,
		Settled: o.ev.Settled, Evidence: o.evidencePath}
	if o.ev.ProbeErr != "" {
		t.Unknown = o.ev.ProbeErr
	} else {
		t.TruthReport = *o.ev.Truth.Report()
	}
	return t
}

func (o *Op) mustEnd() {
	o.srv.t.Helper()
	o.end()
	if o.ev == nil {
		msg := fmt.Sprintf("sshrigtest: %s (%s): the operation could not end: %v", o.Name(), o.id, o.err)
		if o.evidencePath != "" {
			msg += "; evidence " + o.evidencePath
		}
		o.srv.t.Fatal(msg)
	}
}

// Verdict, Grade, Violation and Expected are report.json's (package report,
// package matrix): a judged operation speaks as a matrix run's case does.
type (
	Verdict   = report.Verdict
	Grade     = report.Grade
	Violation = report.Violation
	Expected  = matrix.Expected
)

// Verdicts and grades.
const (
	Pass         = report.Pass
	Fail         = report.Fail
	Inconclusive = report.Inconclusive // the rig could not establish what it needed
	Skipped      = report.Skipped      // the cut cannot apply to this client

	Exact        = report.Exact
	Conservative = report.Conservative // safe, but claims less than could be known
	Unsafe       = report.Unsafe       // claims more than could be known, or invites a blind retry
)

// Judgement is the verdict the rig gives a report of an operation: the one
// a matrix run gives a tool that printed that result for that case.
type Judgement struct {
	Name       string         `json:"name"` // the operation's Name
	Verdict    Verdict        `json:"verdict"`
	Grade      Grade          `json:"grade,omitempty"`
	Expected   Expected       `json:"expected"`
	Reported   *result.Result `json:"reported"`
	ParseError string         `json:"parse_error,omitempty"` // the report is not a valid result
	Reason     string         `json:"reason,omitempty"`      // why inconclusive or skipped
	Violations []Violation    `json:"violations"`
	Truth      Truth          `json:"truth"`
}

// Caught reports whether a violation of the rule (e.g. "unsafe_category") was
// found.
func (j Judgement) Caught(rule string) bool {
	for _, v := range j.Violations {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// String is the judgement in the words a failed subtest of Harness.Run uses
// (Explain): the verdict, what was reported, what was honest, what really
// happened remotely and each violation, then where the evidence is.
func (j Judgement) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", j.Name, j.Verdict)
	if j.Grade != "" {
		fmt.Fprintf(&b, " (%s)", j.Grade)
	}
	if j.Reason != "" {
		fmt.Fprintf(&b, ": %s", j.Reason)
	}
	switch {
	case j.Reported != nil:
		fmt.Fprintf(&b, "\n  reported: %s/%s %q", j.Reported.Category, j.Reported.Retry, j.Reported.Message)
	case j.ParseError != "":
		fmt.Fprintf(&b, "\n  reported: no valid result (%s)", j.ParseError)
	default:
		b.WriteString("\n  reported: nothing")
	}
	fmt.Fprintf(&b, "\n  honest:   %s/%s", j.Expected.Category, j.Expected.Retry)
	if j.Truth.State != "" {
		fmt.Fprintf(&b, "\n  remotely: %s", remotely(&j.Truth.TruthReport))
	}
	for _, v := range j.Violations {
		fmt.Fprintf(&b, "\n  violation: %s", v)
	}
	if j.Truth.Evidence != "" {
		fmt.Fprintf(&b, "\n  evidence: %s", j.Truth.Evidence)
	}
	return b.String()
}

// Judge ends the operation, if its truth was not asked yet, and judges r as
// the report of it: the verdict a matrix run gives a tool that printed r in
// this case, by the same assertions (verdict.Judge) on the same evidence.
// A test asserts on the Judgement, or fails with its String. Call it from the
// test's goroutine; when the operation could not end at all it stops the
// test.
//
// What only a run of a tool can show is not judged here: how long the
// client took (a hang), processes it left running, and the rig's event log.
func (o *Op) Judge(r result.Result) Judgement {
	o.srv.t.Helper()
	o.mustEnd()
	ev := o.ev
	j := Judgement{Name: o.Name(), Truth: o.Truth(), Violations: []Violation{}}
	if ev.Cut != nil && ev.Cut.NoHelper {
		j.Verdict, j.Reason = Skipped, "kill-helper needs a helper process that owns the client's SSH socket (such as the ssh child of a wrapper); this client holds its socket itself"
		return j
	}
	stdout, err := r.Marshal()
	if err != nil {
		// Judged as the malformed result it is, as a tool printing it
		// would be.
		stdout, _ = json.Marshal(r)
	}
	stdout = append(stdout, '\n')
	read := verdict.ReadResult(stdout, int64(len(stdout)))
	in := ev.VerdictInput(evidence.Of(ev.Events, o.id), o.id, o.moment, o.cut) // as the rig's run reads it
	in.Operation, in.ExitCode = o.operation, o.exitCode
	in.Stdout, in.StdoutBytes, in.Read = stdout, int64(len(stdout)), &read
	in.Secrets = o.srv.secrets
	v := verdict.Judge(in)
	j.Verdict, j.Grade, j.Reason = v.Status, v.Grade, v.Reason
	j.Expected = Expected{Category: v.Expected.Category, Retry: v.Expected.Retry}
	j.Reported, j.ParseError = v.Reported, string(secret.Redact([]byte(v.ParseError), o.srv.secrets))
	for _, x := range v.Violations {
		j.Violations = append(j.Violations, Violation{Assertion: x.Assertion, Rule: x.Rule,
			Detail: string(secret.Redact([]byte(x.Detail), o.srv.secrets))})
	}
	return j
}
