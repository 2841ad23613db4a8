package rig

import (
	"bytes"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// A spooled run's report.json is byte for byte what Report.JSON makes of
// the same report with its cases in memory, and the sink keeps dispatch
// order whatever order the case runs finish in.
func TestSpooledReportJSON(t *testing.T) {
	sink, err := newCaseSink(Options{Repeat: Repeat{Times: 2}, Out: &RunDir{Path: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.close()
	var cases []report.CaseReport
	for i, id := range []string{"none.exit0", "started.reset.survive", "none.exit0", "started.reset.survive"} {
		c := report.CaseReport{ID: id, Moment: fault.Started, Verdict: report.Pass, CorrelationID: "c-" + string(rune('a'+i)),
			Violations: []report.Violation{}, Draw: &matrix.Draw{Round: 1 + i/2, Seed: uint64(i), AnswerDelayMS: 1.5}}
		if i == 1 {
			c.Verdict, c.Violations = report.Fail, []report.Violation{{Assertion: "category", Rule: "unsafe_category", Detail: "a \"quoted\" <detail>"}}
		}
		cases = append(cases, c)
	}
	for _, i := range []int{1, 0, 3, 2} { // finished out of order
		sink.put(i, cases[i])
	}
	if err := sink.finish(); err != nil {
		t.Fatal(err)
	}
	rep := &report.Report{Version: report.ReportVersion, Tool: "reference", Started: time.Unix(0, 0).UTC(), Summary: sink.agg.Summary(),
		Repeat: &report.RepeatReport{Seed: 1, Times: 2}, Rates: sink.agg.Rates()}
	var spooled bytes.Buffer
	if err := writeJSON(&spooled, rep, sink); err != nil {
		t.Fatal(err)
	}
	rep.Cases = cases
	want, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(spooled.Bytes(), want) {
		t.Fatalf("spooled report.json differs:\n%s\nwant:\n%s", spooled.Bytes(), want)
	}
	if rep.Summary.Cases != 4 || rep.Summary.Fail != 1 || rep.Rates[0].ID != "none.exit0" || rep.Rates[1].Fail != 1 || !rep.Rates[1].Flaky {
		t.Fatalf("aggregates: %+v %+v", rep.Summary, rep.Rates)
	}
}
