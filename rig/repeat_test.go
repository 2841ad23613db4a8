package rig

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/tool"
)

// draws is what a repeated run drew, in the order it dispatched: the case
// runs with their seeds, and the parallelism.
func draws(rep *report.Report) (order []string, seeds []uint64, parallel int) {
	for _, c := range rep.Cases {
		order = append(order, c.RunName())
		seeds = append(seeds, c.Draw.Seed)
	}
	return order, seeds, rep.Repeat.Parallel
}

// repeatRun runs the cases the globs select rp's way, with a run directory
// (transcripts included) that the test removes.
func repeatRun(t *testing.T, tl tool.Tool, globs []string, rp Repeat) *report.Report {
	t.Helper()
	cases, err := matrix.Select(matrix.DefaultMatrix(), globs)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := CreateRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Tool: tl, Cases: cases, Parallel: 2, Repeat: rp, Out: dir})
	if cerr := dir.Close(); cerr != nil {
		t.Errorf("run directory: %v", cerr)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if rep.CasesOnDisk {
		// A repeated run holds only its aggregates; its case runs are in
		// report.json, with the same summary and rates.
		full, err := report.ReadReport(dir.Path)
		if err != nil {
			t.Fatal(err)
		}
		if full.Summary != rep.Summary || len(full.Rates) != len(rep.Rates) || len(full.Cases) != rep.Summary.Cases {
			t.Fatalf("report.json says %+v (%d cases), the run %+v", full.Summary, len(full.Cases), rep.Summary)
		}
		rep = full
	}
	return rep
}

// Acceptance 1: the same seed gives the same order, parallelism and case
// run seeds; another seed gives another order.
func TestRepeatSameSeedSameDraws(t *testing.T) {
	globs := []string{"none.*", "started.reset.*"}
	rp := Repeat{Times: 4, Seed: 20261202, DrawParallel: 4}
	o1, s1, p1 := draws(repeatRun(t, tools.Reference{}, globs, rp))
	o2, s2, p2 := draws(repeatRun(t, tools.Reference{}, globs, rp))
	if !slices.Equal(o1, o2) || !slices.Equal(s1, s2) || p1 != p2 {
		t.Fatalf("seed %d drew differently:\n%v %v %d\n%v %v %d", rp.Seed, o1, s1, p1, o2, s2, p2)
	}
	if len(o1) != 4*5 {
		t.Fatalf("%d case runs, want 20: %v", len(o1), o1)
	}
	rp.Seed++
	o3, s3, _ := draws(repeatRun(t, tools.Reference{}, globs, rp))
	if slices.Equal(o1, o3) || slices.Equal(s1, s3) {
		t.Fatalf("seeds %d and %d drew the same order %v", rp.Seed-1, rp.Seed, o1)
	}
}

// Acceptance 2: the flaky mutant comes out flaky, with a failure rate whose
// interval contains its true rate.
func TestRepeatFlakyMutant(t *testing.T) {
	m, err := tools.Lookup("mutant:sometimes-lost-status-is-success")
	if err != nil {
		t.Fatal(err)
	}
	rep := repeatRun(t, m, []string{"started.reset.survive"}, Repeat{Times: 50, Seed: 7})
	if len(rep.Rates) != 1 {
		t.Fatalf("rates: %+v", rep.Rates)
	}
	r := rep.Rates[0]
	if !r.Flaky || r.Runs != 50 || r.Inconclusive != 0 || !r.Failure.Contains(tools.FlakyRate) {
		t.Fatalf("want flaky with an interval containing %v: %+v", tools.FlakyRate, r)
	}
	if len(r.FirstFailures) == 0 || r.FirstFailures[0].CorrelationID == "" {
		t.Fatalf("no first failures: %+v", r)
	}
	for _, c := range rep.Cases {
		if c.Verdict == report.Fail && c.RunName() == r.FirstFailures[0].Run {
			return
		}
	}
	t.Fatalf("first failure %s is no failing case run", r.FirstFailures[0].Run)
}

// A schedule hands out every case once per round, each round a
// permutation, and stops at its rounds or its time.
func TestScheduleRounds(t *testing.T) {
	cases := []matrix.Case{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	start := time.Unix(0, 0)
	s := newSchedule(Options{Cases: cases, Parallel: 3, Repeat: Repeat{Times: 3, Seed: 1}}, start)
	seen := map[string]int{}
	for round := 1; round <= 3; round++ {
		got := map[string]bool{}
		for range cases {
			c, ok := s.next(start)
			if !ok || c.Draw.Round != round || got[c.ID] {
				t.Fatalf("round %d: %+v %v (%v)", round, c, ok, got)
			}
			got[c.ID] = true
			seen[c.RunName()]++
		}
	}
	if _, ok := s.next(start); ok || len(seen) != 9 {
		t.Fatalf("more than 3 rounds, or repeated case runs: %v", seen)
	}
	s = newSchedule(Options{Cases: cases, Parallel: 1, Repeat: Repeat{For: time.Minute, Seed: 1}}, start)
	for i := 0; i < 100; i++ {
		if _, ok := s.next(start.Add(time.Second)); !ok {
			t.Fatalf("stopped after %d case runs with time left", i)
		}
	}
	if _, ok := s.next(start.Add(time.Minute)); ok {
		t.Fatal("a case run started after --for was spent")
	}
}

// Rates count per case, judge the rate on pass and fail only, and mark a
// case flaky only where it both passed and failed.
func TestRates(t *testing.T) {
	cr := func(id string, round int, v report.Verdict) report.CaseReport {
		return report.CaseReport{ID: id, Verdict: v, CorrelationID: "c-" + id, Draw: &matrix.Draw{Round: round}}
	}
	rates := report.Rates([]report.CaseReport{cr("a", 1, report.Pass), cr("b", 1, report.Fail), cr("a", 2, report.Fail),
		cr("a", 3, report.Inconclusive), cr("b", 2, report.Fail), cr("c", 1, report.Skipped)})
	want := []struct {
		id                  string
		runs, pass, fail, i int
		rate                float64
		flaky               bool
		status              string
	}{
		{"a", 3, 1, 1, 1, 0.5, true, "flaky"},
		{"b", 2, 0, 2, 0, 1, false, "fail"},
		{"c", 1, 0, 0, 0, 0, false, "skipped"},
	}
	if len(rates) != len(want) {
		t.Fatalf("%+v", rates)
	}
	for i, w := range want {
		r := rates[i]
		if r.ID != w.id || r.Runs != w.runs || r.Pass != w.pass || r.Fail != w.fail || r.Inconclusive != w.i ||
			r.Failure.Rate != w.rate || r.Flaky != w.flaky || r.Status() != w.status {
			t.Errorf("%s: got %+v (%s)", w.id, r, r.Status())
		}
	}
	if f := rates[0].FirstFailures; len(f) != 1 || f[0].Run != "a#2" {
		t.Errorf("a's first failures: %+v", f)
	}
}

func TestReproduced(t *testing.T) {
	fail := func(rules ...string) report.CaseReport {
		c := report.CaseReport{Verdict: report.Fail}
		for _, r := range rules {
			a, b, _ := strings.Cut(r, "/")
			c.Violations = append(c.Violations, report.Violation{Assertion: a, Rule: b})
		}
		return c
	}
	for _, tc := range []struct {
		was, now report.CaseReport
		ok       bool
	}{
		{fail("category/unsafe_category"), fail("category/unsafe_category"), true},
		{fail("category/unsafe_category"), fail("no_blind/retry"), false},
		{fail("category/unsafe_category"), report.CaseReport{Verdict: report.Pass}, false},
		{report.CaseReport{Verdict: report.Pass}, report.CaseReport{Verdict: report.Pass}, true},
	} {
		if ok, why := report.Reproduced(tc.was, tc.now); ok != tc.ok {
			t.Errorf("Reproduced(%v, %v) = %v (%s)", tc.was, tc.now, ok, why)
		}
	}
}
