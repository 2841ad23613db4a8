package rig

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/tool"
)

// runServerFaults runs tl on the server matrix's cases that globs select,
// in a run directory whose log must agree with its report.
func runServerFaults(t *testing.T, tl tool.Tool, globs []string) *report.Report {
	t.Helper()
	cases, err := matrix.Select(matrix.ServerMatrix(), globs)
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := runLogged(t, Options{Tool: tl, Cases: cases})
	return rep
}

// runLogged runs o in a run directory of the test's, checks that its event
// log agrees with its report, and returns the report and the directory.
func runLogged(t *testing.T, o Options) (*report.Report, string) {
	t.Helper()
	out, err := CreateRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Out = out
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	checkLogAgrees(t, out.Path)
	t.Log(rep.SummaryLine())
	return rep, out.Path
}

func caseByID(t *testing.T, rep *report.Report, id string) report.CaseReport {
	t.Helper()
	for _, c := range rep.Cases {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no case %s in the report", id)
	return report.CaseReport{}
}

func hasRule(c report.CaseReport, rule string) bool {
	for _, v := range c.Violations {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// TestServerFaultsReference: the reference passes every case of the far
// side's faults, three rounds over, and the one that mistakes a missing exit
// status for success fails the cases where the status never came.
func TestServerFaultsReference(t *testing.T) {
	t.Parallel()
	cases := matrix.ServerMatrix()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Tool: tools.Reference{}, Cases: cases, Repeat: Repeat{Times: 3, Seed: uint64(time.Now().UnixNano())}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Pass != 3*len(cases) {
		for _, c := range rep.Cases {
			if c.Verdict != report.Pass {
				t.Errorf("%s %s: %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
			}
		}
		t.Fatalf("the reference: %s", rep.SummaryLine())
	}

	liar := runServerFaults(t, lookupTool(t, "mutant:lost-status-is-success"), []string{"no-exit-status.*"})
	for _, id := range []string{"no-exit-status.close", "no-exit-status.eof-only"} {
		if c := caseByID(t, liar, id); c.Verdict != report.Fail || !hasRule(c, verdict.RuleUnsafeCategory) {
			t.Errorf("mutant:lost-status-is-success at %s: %s %v, want a fail with %s", id, c.Verdict, c.Violations, verdict.RuleUnsafeCategory)
		}
	}
	// A signal is a status: the mutant's defect does not lie there.
	if c := caseByID(t, liar, "no-exit-status.exit-signal"); c.Verdict != report.Pass {
		t.Errorf("mutant:lost-status-is-success at no-exit-status.exit-signal: %s %v, want a pass", c.Verdict, c.Violations)
	}
}

// TestRebootExamples: after a reboot, the reconciling wrapper looks once the
// host is back and says what it found, without running anything again; the
// one that retries every ssh failure runs the command twice.
func TestRebootExamples(t *testing.T) {
	testpeer.Need(t, "ssh")
	t.Parallel()
	honest := runServerFaults(t, tools.External{Argv: []string{repoFile(t, "docs/examples/ssh-reconcile-honest.sh")}}, []string{"reboot.*"})
	if honest.Summary.Pass != honest.Summary.Cases {
		t.Errorf("ssh-reconcile-honest.sh: %s", honest.SummaryLine())
	}
	found := map[string]string{"reboot.exec": "not_started", "reboot.started": "failed", "reboot.finished": "completed"}
	for id, state := range found {
		c := caseByID(t, honest, id)
		if c.Reported == nil || !strings.Contains(c.Reported.Message, "reconcile probe says "+state) {
			t.Errorf("ssh-reconcile-honest.sh at %s: %+v, want a message saying the probe found %s", id, c.Reported, state)
		}
		if c.Truth == nil || c.Truth.Starts > 1 {
			t.Errorf("ssh-reconcile-honest.sh at %s ran the command again: %+v", id, c.Truth)
		}
	}

	naive := runServerFaults(t, tools.External{Argv: []string{repoFile(t, "docs/examples/ssh-retry-naive.sh")}}, []string{"reboot.started", "reboot.finished"})
	for _, c := range naive.Cases {
		if c.Verdict != report.Fail || !hasRule(c, verdict.RuleBlindRetry) || c.Truth == nil || c.Truth.Starts != 2 {
			t.Errorf("ssh-retry-naive.sh at %s: %s %v, truth %+v; want blind_retry with two starts in the ledger", c.ID, c.Verdict, c.Violations, c.Truth)
		}
	}
}
