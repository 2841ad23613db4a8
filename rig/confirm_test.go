package rig

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// starvedTool is the reference, except that a case run among the run's
// others (every case but the preflight, when always is set) gets no answer
// at all: it waits for its deadline to pass, as a tool starved of the
// machine does. A confirmation runs uncounted by casesInFlight.
type starvedTool struct {
	always bool
	calls  *atomic.Int64
}

func (s starvedTool) Name() string { return "starved-reference" }

func (s starvedTool) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	first := s.calls.Add(1) == 1 // the preflight
	if !first && (s.always || casesInFlight.Load() > 0) {
		<-ctx.Done()
		return
	}
	tools.Reference{}.Run(ctx, t, stdout, stderr)
}

// busyMachine is a machine that made every case wait longer than any
// grace, as one that starves a tool does: no hang has its wait given back.
func busyMachine() func() (time.Duration, bool) {
	return func() (time.Duration, bool) { return time.Hour, true }
}

func confirmRun(t *testing.T, always bool) (*report.Report, string) {
	t.Helper()
	return confirmRunOn(t, always, busyMachine)
}

func confirmRunOn(t *testing.T, always bool, machine func() func() (time.Duration, bool)) (*report.Report, string) {
	t.Helper()
	cases, err := matrix.Select(matrix.DefaultMatrix(), []string{"none.exit0", "none.exit3", "started.reset.survive"})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := CreateRunDir(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Tool: starvedTool{always: always, calls: new(atomic.Int64)}, Cases: cases,
		Parallel: len(cases), Budget: time.Second, Grace: 300 * time.Millisecond, Out: dir, machineWait: machine})
	if err != nil {
		t.Fatal(err)
	}
	return rep, dir.Path
}

// lastVerdicts is the last "verdict" event of each correlation id in the
// run directory's event log.
func lastVerdicts(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	last := map[string]map[string]any{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e struct {
			Event         string         `json:"event"`
			CorrelationID string         `json:"correlation_id"`
			Data          map[string]any `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event == "verdict" {
			last[e.CorrelationID] = e.Data
		}
	}
	return last
}

// TestTimingFailureBesideOthersIsConfirmedAlone: a hang seen only while
// other cases were in flight does not reproduce alone; the case passes, its
// report keeps both runs, and the event log's last verdict for each run is
// the final one.
func TestTimingFailureBesideOthersIsConfirmedAlone(t *testing.T) {
	rep, dir := confirmRun(t, false)
	if rep.Summary.Pass != 3 {
		t.Fatalf("summary %+v, want 3 pass", rep.Summary)
	}
	checkLogAgrees(t, dir) // the busy first runs' amended events included
	last := lastVerdicts(t, dir)
	for _, c := range rep.Cases {
		ca := c.ConfirmedAlone
		if ca == nil {
			t.Fatalf("%s: not confirmed alone", c.ID)
		}
		if ca.First.Verdict != report.Fail || len(ca.First.Rules) != 1 || ca.First.Rules[0] != report.AssertNoBlind+"/"+verdict.RuleHang {
			t.Errorf("%s: first run %+v, want a hang", c.ID, ca.First)
		}
		if ca.Busy == "" || ca.Alone.Verdict != report.Pass || ca.Alone.CorrelationID != c.CorrelationID || ca.First.CorrelationID == c.CorrelationID {
			t.Errorf("%s: %+v", c.ID, ca)
		}
		for _, id := range []string{ca.First.CorrelationID, ca.Alone.CorrelationID} {
			if v := last[id]["verdict"]; v != string(report.Pass) {
				t.Errorf("%s: the log's last verdict for %s is %v, want pass", c.ID, id, v)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, ca.First.Transcript)); err != nil || ca.First.Transcript == c.Transcript {
			t.Errorf("%s: the first run's transcript %q: %v", c.ID, ca.First.Transcript, err)
		}
	}
}

// TestTimingFailureAloneCounts: a hang that shows alone too is a failure.
func TestTimingFailureAloneCounts(t *testing.T) {
	rep, dir := confirmRun(t, true)
	if rep.Summary.Fail != 3 {
		t.Fatalf("summary %+v, want 3 fail", rep.Summary)
	}
	last := lastVerdicts(t, dir)
	for _, c := range rep.Cases {
		if c.ConfirmedAlone == nil || c.ConfirmedAlone.Alone.Verdict != report.Fail {
			t.Fatalf("%s: %+v", c.ID, c.ConfirmedAlone)
		}
		if v := last[c.ConfirmedAlone.First.CorrelationID]["verdict"]; v != string(report.Fail) {
			t.Errorf("%s: the log's last verdict for the first run is %v", c.ID, v)
		}
	}
}

// TestHangWithTheMachinesWaitGivenBackStands: on a machine that made the
// cases wait only briefly, that wait is given back before a tool counts as
// hung; a tool still silent then would hang alone too, so its hang is not
// run again alone.
func TestHangWithTheMachinesWaitGivenBackStands(t *testing.T) {
	quiet := func() func() (time.Duration, bool) {
		return func() (time.Duration, bool) { return 10 * time.Millisecond, true }
	}
	rep, dir := confirmRunOn(t, true, quiet)
	if rep.Summary.Fail != 3 {
		t.Fatalf("summary %+v, want 3 fail", rep.Summary)
	}
	checkLogAgrees(t, dir)
	for _, c := range rep.Cases {
		if c.ConfirmedAlone != nil {
			t.Errorf("%s: run again alone: %+v", c.ID, c.ConfirmedAlone)
		}
		if len(c.Violations) != 1 || c.Violations[0].Rule != verdict.RuleHang {
			t.Errorf("%s: %v, want a hang", c.ID, c.Violations)
		}
	}
	given := 0
	err := eventlog.ReadFile(filepath.Join(dir, eventlog.FileName), func(_ int, e eventlog.Entry) error {
		if e.Event == "tool_returned" && e.Data["wait_given_back"] == true {
			given++
		}
		return nil
	})
	if err != nil || given != 3 {
		t.Errorf("tool_returned with the wait given back: %d, want 3 (%v)", given, err)
	}
}

func TestRestsOnTiming(t *testing.T) {
	hang := report.Violation{Assertion: report.AssertNoBlind, Rule: verdict.RuleHang}
	unsafe := report.Violation{Assertion: report.AssertCategory, Rule: verdict.RuleUnsafeCategory}
	unexpected := report.Violation{Assertion: report.AssertCategory, Rule: verdict.RuleUnexpected}
	for _, tc := range []struct {
		name      string
		cr        report.CaseReport
		cutMissed bool
		want      bool
	}{
		{"hang", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{hang}}, false, true},
		{"hang and unsafe", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{hang, unsafe}}, false, false},
		{"unsafe", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unsafe}}, false, false},
		{"gave up before the moment", report.CaseReport{Verdict: report.Inconclusive,
			Reason: "the cut did not land: the exchange never reached the exec moment"}, true, true},
		{"gone before the cut", report.CaseReport{Verdict: report.Inconclusive,
			Reason: "the cut did not land: the cut failed: cutter: connection already closed"}, true, true},
		{"truth unknown", report.CaseReport{Verdict: report.Inconclusive, Reason: "remote state unknown: probe failed"}, false, false},
		{"gave up before sending, nothing cut", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unexpected},
			Reported: &result.Result{Category: result.LocalFailure}, Truth: &reconcile.TruthReport{State: reconcile.NotStarted}}, false, true},
		{"gave up before sending, at a cut", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unexpected}, Cut: "reset",
			Reported: &result.Result{Category: result.LocalFailure}, Truth: &reconcile.TruthReport{State: reconcile.NotStarted}}, false, false},
		{"local_failure though it ran", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unexpected},
			Reported: &result.Result{Category: result.LocalFailure}, Truth: &reconcile.TruthReport{State: reconcile.Completed}}, false, false},
		{"local_failure and a leak", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unexpected, {Assertion: report.AssertEvidence, Rule: verdict.RuleSecret}},
			Reported: &result.Result{Category: result.LocalFailure}, Truth: &reconcile.TruthReport{State: reconcile.NotStarted}}, false, false},
		{"ran out of its deadline, nothing cut", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unexpected},
			Reported: &result.Result{Category: result.OutcomeUnknown}, ToolMS: 4100}, false, true},
		{"unknown at once, nothing cut", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unexpected},
			Reported: &result.Result{Category: result.OutcomeUnknown}, ToolMS: 300}, false, false},
		{"ran out of its deadline, at a cut", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unexpected}, Cut: "reset",
			Reported: &result.Result{Category: result.OutcomeUnknown}, ToolMS: 4100}, false, false},
		{"ran out and leaked", report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{unexpected, {Assertion: report.AssertEvidence, Rule: verdict.RuleSecret}},
			Reported: &result.Result{Category: result.OutcomeUnknown}, ToolMS: 4100}, false, false},
		{"pass", report.CaseReport{Verdict: report.Pass}, false, false},
	} {
		if got := restsOnTiming(tc.cr, tc.cutMissed, false, 5*time.Second); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// A hang judged with the machine's wait given back hangs alone too.
	if restsOnTiming(report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{hang}}, false, true, 5*time.Second) {
		t.Error("a hang with the machine's wait given back rests on timing")
	}
	noAnswer := report.Violation{Assertion: report.AssertCategory, Rule: verdict.RuleMCPNoAnswer}
	if !restsOnTiming(report.CaseReport{Verdict: report.Fail, Violations: []report.Violation{noAnswer}}, false, true, 5*time.Second) {
		t.Error("an MCP server's missing answer no longer rests on timing once a hang's wait is given back")
	}
}

// gaveUpFirstTool answers its first n runs as a tool starved of the
// machine does when its handshake deadline expires (local_failure, nothing
// sent), at once and without connecting, and is the reference from then on.
type gaveUpFirstTool struct {
	n     int64
	calls *atomic.Int64
}

func (g gaveUpFirstTool) Name() string { return "gave-up-first" }

func (g gaveUpFirstTool) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	if g.calls.Add(1) > g.n {
		tools.Reference{}.Run(ctx, t, stdout, stderr)
		return
	}
	b, _ := result.Result{Category: result.LocalFailure, Operation: t.Operation, Retry: result.Bounded,
		CorrelationID: t.CorrelationID, Message: "handshake: i/o timeout; nothing was sent"}.Marshal()
	stdout.Write(append(b, '\n'))
}

// preflightBeside runs the rig on one case with the given tool while, to
// this process, another run's case is in flight, as when several runs share
// it (a test package running mutants in parallel).
func preflightBeside(t *testing.T, tl tool.Tool) (*report.Report, string, error) {
	t.Helper()
	cases, err := matrix.Select(matrix.DefaultMatrix(), []string{"none.exit0"})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := CreateRunDir(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	casesInFlight.Add(1)
	defer casesInFlight.Add(-1)
	rep, err := Run(context.Background(), Options{Tool: tl, Cases: cases, Budget: 2 * time.Second, Out: dir})
	return rep, dir.Path, err
}

// TestPreflightTimingFailureBesideOthersIsConfirmedAlone: a preflight whose
// tool gave up while another run's case was in flight is run again alone;
// the run goes on, and the preflight's report keeps both runs. (Not
// parallel: it holds casesInFlight up, which the package's parallel tests
// would read as a busy machine.)
func TestPreflightTimingFailureBesideOthersIsConfirmedAlone(t *testing.T) {
	calls := new(atomic.Int64)
	rep, dir, err := preflightBeside(t, gaveUpFirstTool{n: 1, calls: calls})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkLogAgrees(t, dir) // the preflight's runs included
	if rep.Summary.Pass != 1 || calls.Load() != 3 {
		t.Fatalf("%s, %d tool runs, want 1 pass after 3 runs", rep.SummaryLine(), calls.Load())
	}
	ca := rep.Preflight.Case.ConfirmedAlone
	if ca == nil || ca.Busy == "" || ca.First.Verdict != report.Fail || ca.Alone.Verdict != report.Pass {
		t.Fatalf("the preflight's record of both runs: %+v", ca)
	}
	if v := lastVerdicts(t, dir)[ca.First.CorrelationID]["verdict"]; v != string(report.Pass) {
		t.Errorf("the log's last verdict for the preflight's first run is %v, want pass (the alone run's)", v)
	}
}

// TestPreflightTimingFailureAloneStops: a tool that gives up alone too
// fails the preflight, with both runs recorded.
func TestPreflightTimingFailureAloneStops(t *testing.T) {
	calls := new(atomic.Int64)
	rep, _, err := preflightBeside(t, gaveUpFirstTool{n: 2, calls: calls})
	var pe *report.PreflightError
	if !errors.As(err, &pe) || !strings.Contains(pe.Reason, "local_failure/bounded on a case with no fault") {
		t.Fatalf("run: %v, want the preflight's error", err)
	}
	if calls.Load() != 2 || rep.Preflight.Case.ConfirmedAlone == nil || rep.Preflight.Case.ConfirmedAlone.Alone.Verdict != report.Fail {
		t.Fatalf("%d tool runs, the preflight's record %+v", calls.Load(), rep.Preflight.Case)
	}
}

// signalWriter closes ch the first time a write contains s.
type signalWriter struct {
	s    string
	ch   chan struct{}
	once bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if !w.once && strings.Contains(string(p), w.s) {
		w.once = true
		close(w.ch)
	}
	return len(p), nil
}

// TestConfirmWithinRunHoldsBackNoOtherRun: a run that confirms within
// itself (a defective tool's, in a test) holds back none of the process's
// other runs while its cases run again alone; another run starts, runs
// and ends meanwhile.
func TestConfirmWithinRunHoldsBackNoOtherRun(t *testing.T) {
	cases, err := matrix.Select(matrix.DefaultMatrix(), []string{"none.exit0", "none.exit3", "started.reset.survive"})
	if err != nil {
		t.Fatal(err)
	}
	confirming := &signalWriter{s: "running each again alone", ch: make(chan struct{})}
	firstDone := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Options{Tool: starvedTool{always: true, calls: new(atomic.Int64)}, Cases: cases,
			Parallel: len(cases), Budget: 3 * time.Second, Grace: 300 * time.Millisecond, Progress: confirming,
			machineWait: busyMachine, confirmWithinRun: true})
		firstDone <- err
	}()
	select {
	case <-confirming.ch:
	case err := <-firstDone:
		t.Fatalf("the starved run ended before it confirmed anything: %v", err)
	}
	// Its three confirmations take 3.3s each; this run needs a fraction of one.
	other, err := Run(context.Background(), Options{Tool: tools.Reference{}, Cases: cases[:1]})
	if err != nil || other.Summary.Pass != 1 {
		t.Fatalf("the other run: %v %+v", err, other)
	}
	select {
	case err := <-firstDone:
		t.Fatalf("the other run waited for the starved run's confirmations to end (%v)", err)
	default:
	}
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
}
