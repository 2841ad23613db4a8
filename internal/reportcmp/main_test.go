package main

import (
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	zero := 0
	base := []caseFacts{
		{ID: "none.exit0", Verdict: "pass", Grade: "exact", Truth: &truth{State: "completed", Starts: 1, Completes: 1, ExitCode: &zero}},
		{ID: "refuse", Verdict: "pass", Grade: "exact", Truth: &truth{State: "not_started"}},
	}
	var out strings.Builder
	if n, d := compare(base, base, &out); n != 2 || d != 0 {
		t.Fatalf("same reports: compared %d, differences %d\n%s", n, d, out.String())
	}
	changed := []caseFacts{base[0], base[1]}
	changed[1].Verdict = "fail"
	changed[1].Violations = append(changed[1].Violations, struct {
		Assertion string `json:"assertion"`
		Rule      string `json:"rule"`
	}{"category", "unsafe_category"})
	out.Reset()
	if _, d := compare(base, changed, &out); d != 2 {
		t.Fatalf("differences %d, want 2 (verdict, violations)\n%s", d, out.String())
	}
	out.Reset()
	if _, d := compare(base, base[:1], &out); d != 1 || !strings.Contains(out.String(), "refuse: missing after") {
		t.Fatalf("a missing case must be a difference: %d\n%s", d, out.String())
	}
}
