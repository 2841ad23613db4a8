package rig

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/tool"
	"golang.org/x/sync/errgroup"
)

// TestLogAgreesWithReport: for whole default-matrix runs of the reference
// and of every built-in mutant, each case run's verdict event in events.jsonl
// carries the verdict, grade, reason and violations report.json carries for
// it. (TestRealClients checks the same for the docs/examples wrappers.) The
// same runs show every mutant caught: it fails, and its report names the
// assertion that must catch its defect (new mutants are covered
// automatically).
func TestLogAgreesWithReport(t *testing.T) {
	var globs []string
	if testing.Short() {
		globs = matrix.MutantCases()
	}
	all := []tool.Tool{tools.Reference{}}
	for _, m := range tools.Mutants() {
		all = append(all, m)
	}

	var compared atomic.Int64
	t.Cleanup(func() {
		t.Logf("%d tools, %d case runs: the log and the report agree on every one", len(all), compared.Load())
	})
	run := func(t *testing.T, tl tool.Tool) {
		dir, err := CreateRunDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		// A mutant's confirmations hold back only its own run: nothing an
		// alone run of a defective tool shows can make it pass, and its
		// hangs, run again alone, would otherwise hold every test of the
		// package back. The reference's hold the process as any run's do.
		_, mutant := tl.(tools.Mutant)
		rep := runOptions(t, globs, Options{Tool: tl, Out: dir, confirmWithinRun: mutant})
		if err := dir.Close(); err != nil {
			t.Fatal(err)
		}
		compared.Add(int64(checkLogAgrees(t, dir.Path)))
		if m, ok := tl.(tools.Mutant); ok {
			checkCaught(t, m, rep)
		}
	}
	// mutant:no-deadlines never answers under a dead transport: it runs on
	// its own first, so that its sixteen hangs are judged with the
	// machine's wait given back (rig/machinewait.go) rather than each run
	// again alone after a first pass beside the other tools. The others
	// run five at a time: a case run mostly waits (t.Parallel would allow
	// go test's -parallel, the core count; t.Run may be called from
	// goroutines).
	var g errgroup.Group
	g.SetLimit(5)
	defer g.Wait()
	for _, tl := range all {
		if tl.Name() == "mutant:no-deadlines" {
			t.Run(tl.Name(), func(t *testing.T) { run(t, tl) })
		}
	}
	for _, tl := range all {
		if tl.Name() == "mutant:no-deadlines" {
			continue
		}
		g.Go(func() error {
			t.Run(tl.Name(), func(t *testing.T) { run(t, tl) })
			return nil
		})
	}
}

// checkLogAgrees compares every case run of the run directory's report.json
// (the preflight's included) with its verdict event in the event log, and
// returns how many it compared.
func checkLogAgrees(t *testing.T, runDir string) int {
	t.Helper()
	rep, err := report.ReadReport(runDir)
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string][]report.CaseReport{} // correlation id -> its verdict events, as a case report's fields
	err = eventlog.ReadFile(filepath.Join(runDir, eventlog.FileName), func(_ int, e eventlog.Entry) error {
		if e.Source != eventlog.SourceRig || e.Event != "verdict" {
			return nil
		}
		b, err := json.Marshal(e.Data)
		if err != nil {
			return err
		}
		var v report.CaseReport
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		logged[e.CorrelationID] = append(logged[e.CorrelationID], v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := rep.Cases
	if rep.Preflight.Case != nil {
		cases = append([]report.CaseReport{*rep.Preflight.Case}, cases...)
	}
	for _, c := range cases {
		if ca := c.ConfirmedAlone; ca != nil {
			// The busy first run's last verdict event carries the alone
			// run's decision (rig/confirm.go).
			first := logged[ca.First.CorrelationID]
			if n := len(first); n < 2 || first[n-1].Verdict != c.Verdict || !reflect.DeepEqual(first[n-1].Violations, c.Violations) {
				t.Errorf("%s: the first run %s's last verdict event is not the alone run's decision", c.ID, ca.First.CorrelationID)
			}
			delete(logged, ca.First.CorrelationID)
		}
		evs := logged[c.CorrelationID]
		want := 1
		if slices.ContainsFunc(c.Violations, func(v report.Violation) bool { return v.Rule == verdict.RuleAmbiguous }) {
			want = 2 // the run's ambiguity amends the case's decision (rig/readings.go)
		}
		if len(evs) != want {
			t.Errorf("%s (%s): %d verdict events in the log, want %d", c.ID, c.CorrelationID, len(evs), want)
			continue
		}
		got := evs[len(evs)-1]
		if !reflect.DeepEqual(got.Hosts, c.Hosts) {
			t.Errorf("%s: the log's hosts %+v; the report's %+v", c.ID, got.Hosts, c.Hosts)
		}
		if got.Verdict != c.Verdict || got.Grade != c.Grade || got.Reason != c.Reason || !reflect.DeepEqual(got.Violations, c.Violations) {
			t.Errorf("%s: the log says %s/%s %v %q; the report %s/%s %v %q", c.ID,
				got.Verdict, got.Grade, got.Violations, got.Reason, c.Verdict, c.Grade, c.Violations, c.Reason)
		}
	}
	if len(logged) != len(cases) {
		t.Errorf("%d case runs have verdict events in the log, the report has %d", len(logged), len(cases))
	}
	return len(cases)
}

// checkCaught: the mutant's run fails, with a violation of the assertion
// that must catch its defect.
func checkCaught(t *testing.T, m tools.Mutant, rep *report.Report) {
	t.Helper()
	if rep.Summary.Fail == 0 {
		t.Fatalf("%s passed: %s", m.Name(), rep.SummaryLine())
	}
	for _, c := range rep.Cases {
		for _, v := range c.Violations {
			if v.Assertion == m.Catches() {
				return
			}
		}
	}
	t.Fatalf("%s not caught by %s: %s", m.Name(), m.Catches(), rep.SummaryLine())
}
