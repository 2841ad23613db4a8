package rig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

// A verdict that rests on timing (a hang, a tool that gave up before the
// case's moment) says something about the tool only if the tool had its
// share of the machine. One found while the machine was busy (other cases
// in flight, or more runnable work than cores) is run again alone, after
// the rest of the run, with nothing else of this process in flight; the
// alone run's verdict is the case's, and the report keeps both
// (CaseReport.ConfirmedAlone). A failure that shows alone counts; one that
// does not was the rig's schedule's.

// Every case run in this process holds caseGate shared, a confirmation
// holds it alone: several runs in one process (a sharded test, a server)
// do not run beside a confirmation either. A run that confirms within
// itself (Options.confirmWithinRun) also holds a gate of its own, shared
// while its cases run beside each other and alone for its confirmations,
// which hold caseGate shared: they wait for no other run, hold back none,
// and still never run beside another run's confirmation. caseGate is
// always taken first.
var (
	caseGate      sync.RWMutex
	casesInFlight atomic.Int64
	casesStarted  atomic.Uint64
)

// runBeside runs a case beside the run's others and says, in busy, how
// the machine was busy meanwhile ("" when it was not).
func (r *runner) runBeside(ctx context.Context, c matrix.Case) (cr caseResult, busy string) {
	caseGate.RLock()
	if r.ownGate != nil {
		r.ownGate.RLock()
	}
	seq := casesStarted.Add(1)
	others := casesInFlight.Add(1) - 1
	cr = r.runCase(ctx, c)
	after := casesInFlight.Add(-1)
	startedSince := casesStarted.Load() != seq
	if r.ownGate != nil {
		r.ownGate.RUnlock()
	}
	caseGate.RUnlock()
	switch {
	case others > 0 || after > 0 || startedSince:
		busy = "other cases were in flight"
	default:
		if l, cores := loadAverage(), runtime.NumCPU(); l > float64(cores) {
			busy = fmt.Sprintf("the load average (%.1f) was above the %d cores", l, cores)
		}
	}
	return cr, busy
}

// restsOnTiming reports whether the case's verdict rests on timing alone:
// a failure whose every violation is a timing rule, a category failure of a
// tool that gave up where nothing was cut (gaveUpUncut, ranOutUncut; budget
// is the deadline the tool was given), or an inconclusive case whose cut did not land for the
// schedule's reasons (cutMissed, engine.Evidence.MissedOnTiming): the
// exchange never reached the case's moment, the tool's end of the
// connection was gone before the rig got to the cut (its own deadlines
// expired meanwhile), or the rig's own wait for the cut's effect ran out.
// A hang judged with the machine's wait given back (hangStandsAlone,
// rig/machinewait.go) does not rest on timing: alone it hangs too.
func restsOnTiming(cr report.CaseReport, cutMissed, hangStandsAlone bool, budget time.Duration) bool {
	switch cr.Verdict {
	case report.Fail:
		if len(cr.Violations) == 0 {
			return false
		}
		timing, category := true, true
		for _, v := range cr.Violations {
			timing = timing && timingRules[v.Rule] && !(v.Rule == verdict.RuleHang && hangStandsAlone)
			category = category && v.Assertion == report.AssertCategory
		}
		return timing || (category && (gaveUpUncut(cr) || ranOutUncut(cr, budget)))
	case report.Inconclusive:
		return cutMissed
	}
	return false
}

// gaveUpUncut: on a case where nothing was cut, the tool reported that it
// sent nothing (local_failure) and nothing of the workload started: its own
// deadlines expired before the exchange got anywhere, which a starved tool
// does without a defect. A tool that says so for no reason says so alone too.
func gaveUpUncut(cr report.CaseReport) bool {
	return cr.Cut == "" && cr.Reported != nil && cr.Reported.Category == result.LocalFailure &&
		cr.Truth != nil && cr.Truth.State == reconcile.NotStarted
}

// ranOutUncut: on a case where nothing was cut, the tool spent at least
// half its deadline and then reported that it could not tell the outcome.
// A starved honest tool does that when its own deadline expires before the
// exit status is read (a two-step tool's second step gets what the first
// left); the exchange itself was whole, so alone it would have known.
func ranOutUncut(cr report.CaseReport, budget time.Duration) bool {
	return cr.Cut == "" && cr.Reported != nil && cr.Reported.Category == result.OutcomeUnknown &&
		budget > 0 && time.Duration(cr.ToolMS)*time.Millisecond*2 >= budget
}

// timingRules are the rules a starved tool breaks without a defect.
var timingRules = map[string]bool{
	verdict.RuleHang:        true, // no result within budget and grace
	verdict.RuleMCPNoAnswer: true, // the MCP server did not answer in time
}

// toConfirm is a case run waiting to be confirmed alone.
type toConfirm struct {
	i     int
	c     matrix.Case
	first report.CaseReport
	busy  string // how the machine was busy during the first run
}

// needsConfirming reports whether cr is to be confirmed alone (the caller
// keeps it for confirmAlone instead of counting it).
func needsConfirming(ctx context.Context, cr caseResult, busy string, budget time.Duration) bool {
	return busy != "" && ctx.Err() == nil && restsOnTiming(cr.CaseReport, cr.cutMissed, cr.hangStandsAlone, budget)
}

// confirmAlone runs each case again with nothing else in flight, and hands
// each final report to done: the alone run's, with both runs recorded.
func (r *runner) confirmAlone(ctx context.Context, pending []toConfirm, done func(i int, cr report.CaseReport)) {
	for _, p := range pending {
		if ctx.Err() != nil {
			done(p.i, p.first) // not confirmed: it stands as it was seen
			continue
		}
		done(p.i, r.confirmOne(ctx, p.c, p.first, p.busy, nil).CaseReport)
	}
}

// confirmOne runs c again with nothing else of this process in flight and
// returns the alone run, which records both runs. The first run's
// transcript is kept beside the alone run's, as NAME.busy.json, and the
// first run's last verdict event is the alone run's. measure, if not nil,
// is called around the alone run (the preflight measures a case's cost
// there: rig/sizing.go).
func (r *runner) confirmOne(ctx context.Context, c matrix.Case, first report.CaseReport, busy string, measure func(run func())) caseResult {
	if first.Transcript != "" && r.o.Out != nil {
		busyName := strings.TrimSuffix(first.Transcript, ".json") + ".busy.json"
		if err := os.Rename(filepath.Join(r.o.Out.Path, first.Transcript), filepath.Join(r.o.Out.Path, busyName)); err == nil {
			first.Transcript = busyName
		}
	}
	if measure == nil {
		measure = func(run func()) { run() }
	}
	var alone caseResult
	r.lockAlone()
	measure(func() { alone = r.runCase(ctx, c) })
	r.unlockAlone()
	if r.o.Out != nil {
		r.o.Out.ended(alone.CorrelationID)
	}
	alone.ConfirmedAlone = &report.ConfirmedAlone{Busy: busy, First: first.RunOf(), Alone: alone.RunOf()}
	// The first run's final word: its verdict is the alone run's.
	r.logVerdictAs(first.CorrelationID, alone.CaseReport, map[string]any{"confirmed_by": alone.CorrelationID,
		"first_verdict": string(first.Verdict), "first_violations": first.Violations, "busy": busy})
	return alone
}

// lockAlone keeps every other case of the process (of the run, for a run
// that confirms within itself) from running beside a confirmation.
func (r *runner) lockAlone() {
	if r.ownGate == nil {
		caseGate.Lock()
		return
	}
	caseGate.RLock()
	r.ownGate.Lock()
}

func (r *runner) unlockAlone() {
	if r.ownGate == nil {
		caseGate.Unlock()
		return
	}
	r.ownGate.Unlock()
	caseGate.RUnlock()
}

// confirmedNote is a progress line's note on a case confirmed alone.
func confirmedNote(cr report.CaseReport) string {
	if cr.ConfirmedAlone == nil {
		return ""
	}
	f := cr.ConfirmedAlone.First
	seen := string(f.Verdict)
	if len(f.Rules) > 0 {
		seen += " (" + strings.Join(f.Rules, ", ") + ")"
	}
	return " (run again alone: " + seen + " while " + cr.ConfirmedAlone.Busy + ")"
}
