package rig

import (
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// TestPrintAfterGivingUpIsNoReport: a hung in-process tool's report is what
// it printed before the rig gave up. The mutant with no deadlines hangs at
// a blackhole and, once cancelled, prints a report at once (its connection
// closes under it); counted, that print would make the case's grade a race
// between the tool's goroutine and the rig's read.
func TestPrintAfterGivingUpIsNoReport(t *testing.T) {
	var mutant tools.Mutant
	for _, m := range tools.Mutants() {
		if m.Name() == tools.MutantPrefix+"no-deadlines" {
			mutant = m
		}
	}
	if mutant.Name() == "" {
		t.Fatalf("no built-in %sno-deadlines", tools.MutantPrefix)
	}
	globs := []string{"accept.blackhole.*", "handshake.blackhole.*", "auth.blackhole.*", "exec.blackhole.*"}
	cases, err := matrix.Select(matrix.DefaultMatrix(), globs)
	if err != nil {
		t.Fatal(err)
	}
	quiet := func() (time.Duration, bool) { return time.Millisecond, true }
	rep := runOptions(t, globs, Options{Tool: mutant, Parallel: len(cases), Budget: time.Second,
		Grace: 200 * time.Millisecond, machineWait: func() func() (time.Duration, bool) { return quiet }})
	hangs := 0
	for _, c := range rep.Cases {
		if len(c.Violations) == 0 || c.Violations[0].Rule != verdict.RuleHang {
			continue
		}
		hangs++
		if c.Reported != nil || c.Grade != report.Grade("") {
			t.Errorf("%s: reported %+v, graded %q: a print after the rig gave up counted", c.ID, c.Reported, c.Grade)
		}
	}
	if hangs < len(cases) {
		t.Errorf("%d of %d cases hung, want all: %+v", hangs, len(cases), rep.Summary)
	}
}
