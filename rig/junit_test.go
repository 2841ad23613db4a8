package rig

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/tool"
)

// The JUnit XML as a CI system reads it: parsed with encoding/xml into
// types of the test's own, not the writer's.
type xSuites struct {
	Suites []struct {
		Name      string      `xml:"name,attr"`
		Tests     int         `xml:"tests,attr"`
		Failures  int         `xml:"failures,attr"`
		Errors    int         `xml:"errors,attr"`
		Skipped   int         `xml:"skipped,attr"`
		Timestamp string      `xml:"timestamp,attr"`
		Props     []xProperty `xml:"properties>property"`
		Cases     []xCase     `xml:"testcase"`
	} `xml:"testsuite"`
}

type xProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type xCase struct {
	Name    string      `xml:"name,attr"`
	Time    float64     `xml:"time,attr"`
	Props   []xProperty `xml:"properties>property"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
	} `xml:"failure"`
	Skipped *struct{} `xml:"skipped"`
	Flaky   []xRerun  `xml:"flakyFailure"`
	Rerun   []xRerun  `xml:"rerunFailure"`
	Out     string    `xml:"system-out"`
}

type xRerun struct {
	Message    string `xml:"message,attr"`
	Type       string `xml:"type,attr"`
	StackTrace string `xml:"stackTrace"`
	Out        string `xml:"system-out"`
}

func lookupTool(t *testing.T, name string) tool.Tool {
	t.Helper()
	tl, err := tools.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func (c xCase) prop(name string) string {
	for _, p := range c.Props {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

func parseJUnit(t *testing.T, rep *report.Report) (xSuites, map[string]xCase) {
	t.Helper()
	b, err := rep.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var s xSuites
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b)
	}
	if len(s.Suites) != 1 {
		t.Fatalf("%d testsuites", len(s.Suites))
	}
	if _, err := time.Parse("2006-01-02T15:04:05", s.Suites[0].Timestamp); err != nil {
		t.Errorf("testsuite timestamp %q: %v", s.Suites[0].Timestamp, err)
	}
	cases := map[string]xCase{}
	for _, c := range s.Suites[0].Cases {
		cases[c.Name] = c
	}
	return s, cases
}

// A run that is not repeated: a testcase per case, with the case run's
// properties and account.
func TestJUnitCaseRuns(t *testing.T) {
	rep := repeatRun(t, lookupTool(t, "mutant:lost-status-is-success"), []string{"none.exit0", "started.reset.survive", "started.kill-helper.survive"}, Repeat{})
	s, cases := parseJUnit(t, rep)
	if su := s.Suites[0]; su.Tests != 3 || su.Failures != 1 || su.Skipped != 1 {
		t.Errorf("suite counts: %d tests, %d failures, %d skipped; want 3, 1, 1", su.Tests, su.Failures, su.Skipped)
	}
	f := cases["started.reset.survive"]
	if f.Failure == nil || f.Failure.Type != "category/unsafe_category" {
		t.Fatalf("started.reset.survive: failure %+v, want category/unsafe_category", f.Failure)
	}
	corr := ""
	for _, c := range rep.Cases {
		if c.ID == "started.reset.survive" {
			corr = c.CorrelationID
		}
	}
	want := map[string]string{"moment": "started", "cut": "reset", "correlation_id": corr,
		"transcript": "transcripts/started.reset.survive.json"}
	for k, v := range want {
		if got := f.prop(k); got != v {
			t.Errorf("property %s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(f.Out, "transcript: transcripts/started.reset.survive.json") || !strings.Contains(f.Out, "reported succeeded/never") {
		t.Errorf("system-out lacks the case run's account:\n%s", f.Out)
	}
	if cases["started.kill-helper.survive"].Skipped == nil || cases["none.exit0"].Failure != nil || cases["none.exit0"].Time <= 0 {
		t.Errorf("skipped or passing testcases wrong: %+v", cases)
	}
}

// A repeated run: a testcase per case with its rate; a flaky case within
// the threshold passes with a flakyFailure per failing run, above it fails
// with rerunFailures, as Maven Surefire reports reruns.
func TestJUnitFlaky(t *testing.T) {
	rep := repeatRun(t, lookupTool(t, "mutant:sometimes-lost-status-is-success"), []string{"started.reset.survive", "none.exit0"},
		Repeat{Times: 30, Seed: 7})
	fails := rep.Rates[0].Fail
	if rep.Rates[0].ID != "started.reset.survive" || fails < 2 {
		t.Fatalf("seed 7 drew %d failures of started.reset.survive; the test needs two or more", fails)
	}
	s, cases := parseJUnit(t, rep)
	c := cases["started.reset.survive"]
	if s.Suites[0].Tests != 2 || s.Suites[0].Failures != 1 || c.Failure == nil || len(c.Rerun) != fails-1 || len(c.Flaky) != 0 {
		t.Fatalf("above the threshold: %d tests, %d failures, failure %v, %d rerunFailures (want %d), %d flakyFailures",
			s.Suites[0].Tests, s.Suites[0].Failures, c.Failure, len(c.Rerun), fails-1, len(c.Flaky))
	}
	if c.prop("runs") != "30" || c.prop("status") != "flaky" || c.prop("failure_rate") == "" || c.prop("transcript") == "" {
		t.Errorf("rate properties: %+v", c.Props)
	}
	if r := c.Rerun[0]; r.Type != "category/unsafe_category" || !strings.Contains(r.Out, "transcript: transcripts/started.reset.survive.r") {
		t.Errorf("rerunFailure %+v", r)
	}

	rep.Repeat.MaxFailureRate = 0.5
	s, cases = parseJUnit(t, rep)
	c = cases["started.reset.survive"]
	if s.Suites[0].Failures != 0 || c.Failure != nil || len(c.Flaky) != fails {
		t.Fatalf("within the threshold: %d failures, failure %v, %d flakyFailures, want 0, nil, %d", s.Suites[0].Failures, c.Failure, len(c.Flaky), fails)
	}
	if n := strings.Count(c.Out, "\n") + 1; n != 30 {
		t.Errorf("system-out has %d lines, want one per run (30)", n)
	}
}
