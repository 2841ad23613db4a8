package rig

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// probeThenRetry runs the case's reconcile probe after an uncertain attempt
// and then sends the command again — only when the probe said not_started,
// or (Always) whatever it said — and reports the retry's result.
type probeThenRetry struct{ Always bool }

func (p probeThenRetry) Name() string { return "test:probe-then-retry" }

func (p probeThenRetry) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	first := tools.Client{}.Attempt(ctx, t)
	cat, retry, msg := tools.Classify(first)
	if cat == result.OutcomeUnknown && t.Reconcile != "" {
		pt := t
		pt.Command, pt.Operation = t.Reconcile, "reconcile"
		probe := tools.Client{}.Attempt(ctx, pt)
		answer, err := reconcile.ParseAnswer(probe.Stdout)
		if p.Always || (err == nil && answer.State == reconcile.AnswerNotStarted) {
			// Report what the retry established.
			cat, retry, msg = tools.Classify(tools.Client{}.Attempt(ctx, t))
		}
	}
	b, _ := (result.Result{OK: cat == result.Succeeded, Category: cat, Retry: retry, Operation: t.Operation, CorrelationID: t.CorrelationID, Message: msg}).Marshal()
	stdout.Write(append(b, '\n'))
}

// reconciledCase is the default matrix's reconcile-probe case moved to moment
// and disposition.
func reconciledCase(t *testing.T, m fault.Moment, d fault.Disposition) matrix.Case {
	t.Helper()
	cases, err := matrix.Select(matrix.DefaultMatrix(), []string{"reconciled.started.reset.survive"})
	if err != nil || len(cases) != 1 || cases[0].ReconcileProbe == "" {
		t.Fatalf("no reconcile-probe case in the default matrix: %v", err)
	}
	c := cases[0]
	c.ID, c.Alias, c.Moment, c.Disposition = m.String()+".reset."+d.String()+".reconciled", "", m, d
	return c
}

func blindRetry(c *report.CaseReport) bool {
	for _, v := range c.Violations {
		if v.Rule == verdict.RuleBlindRetry {
			return true
		}
	}
	return false
}

// A second attempt is reconciled only when the case's probe ran between the
// two while the command had not started; a probe that found it under way
// justifies nothing.
func TestReconcileProbeJustifiesRetry(t *testing.T) {
	cases := []struct {
		name       string
		tool       tool.Tool
		c          matrix.Case
		wantStarts int
		wantBlind  bool
	}{
		{"not started, probe, retry", probeThenRetry{}, reconciledCase(t, fault.Exec, fault.Hangup), 1, false},
		{"started, probe, retry anyway", probeThenRetry{Always: true}, reconciledCase(t, fault.Started, fault.Survive), 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := Run(ctx, Options{Tool: tc.tool, Cases: []matrix.Case{tc.c}})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Cases[0]
			// Both tools sent the command twice; the ledger shows the
			// starts that happened.
			if c.Truth == nil || c.Truth.Starts != tc.wantStarts {
				t.Fatalf("truth %+v, want %d start markers", c.Truth, tc.wantStarts)
			}
			if got := blindRetry(&c); got != tc.wantBlind {
				t.Fatalf("blind retry finding = %t, want %t; verdict %s %+v", got, tc.wantBlind, c.Verdict, c.Violations)
			}
			// A reconciled retry whose exit status arrived is reported
			// as what it is: the case passes whole.
			if !tc.wantBlind && (c.Verdict != report.Pass || c.Reported == nil || c.Reported.Category != result.Succeeded) {
				t.Fatalf("reconciled retry: verdict %s, reported %+v, violations %+v", c.Verdict, c.Reported, c.Violations)
			}
		})
	}
}

func TestProbedBetween(t *testing.T) {
	const id, probe = "c-1", "probe-digest"
	ev := func(kind control.EventKind, conn int) control.Event {
		return control.Event{Kind: kind, Conn: conn, Session: 1}
	}
	attempt := func(conn int) control.Event {
		e := ev(control.ExecReceived, conn)
		e.MarkerID = id
		return e
	}
	refused := func(conn int) control.Event {
		e := ev(control.ExecRefused, conn)
		e.MarkerID = id
		return e
	}
	probeExec := func(conn int, digest string) control.Event {
		e := ev(control.ExecReceived, conn)
		e.Digest = digest
		return e
	}
	skipped := func(conn int) control.Event { return ev(control.ExecSkipped, conn) }
	finished := func(conn int) control.Event { return ev(control.ExecFinished, conn) }
	spawned := func(conn int) control.Event { return ev(control.ProcSpawned, conn) }
	exit := func(conn int) control.Event { return ev(control.ExitSent, conn) }
	// A probe that ran to its exit status, on connection conn.
	probed := func(conn int) []control.Event {
		return []control.Event{probeExec(conn, probe), exit(conn), finished(conn)}
	}
	seq := func(parts ...any) []control.Event {
		var out []control.Event
		for _, p := range parts {
			switch p := p.(type) {
			case control.Event:
				out = append(out, p)
			case []control.Event:
				out = append(out, p...)
			}
		}
		return out
	}
	tests := []struct {
		name   string
		events []control.Event
		want   bool
	}{
		{"never started, probed, retried", seq(attempt(1), skipped(1), finished(1), probed(2), attempt(3)), true},
		{"refused, probed, retried", seq(refused(1), probed(2), attempt(3)), true},
		{"one attempt only", seq(attempt(1), skipped(1), finished(1), probed(2)), false},
		{"the probe found it started", seq(attempt(1), spawned(1), probed(2), attempt(3)), false},
		{"probed while the first request was still held", seq(attempt(1), probed(2), skipped(1), finished(1), attempt(3)), false},
		{"the retry came before the probe's exit status", seq(attempt(1), skipped(1), finished(1), probeExec(2, probe), attempt(3), exit(2)), false},
		{"no probe", seq(attempt(1), skipped(1), finished(1), attempt(3)), false},
		{"another command, not the probe", seq(attempt(1), skipped(1), finished(1), probeExec(2, "other"), exit(2), attempt(3)), false},
		{"probe before the first attempt", seq(probed(2), attempt(1), skipped(1), finished(1), attempt(3)), false},
		{"a refused probe ran nothing", seq(attempt(1), skipped(1), finished(1), ev(control.ExecRefused, 2), attempt(3)), false},
		{"blind retry, then probe, then retry", seq(attempt(1), skipped(1), finished(1), attempt(3), skipped(3), finished(3), probed(4), attempt(5)), false},
		{"one probe, two retries", seq(attempt(1), skipped(1), finished(1), probed(2), attempt(3), skipped(3), finished(3), attempt(5)), false},
		{"a probe before each retry", seq(attempt(1), skipped(1), finished(1), probed(2), attempt(3), skipped(3), finished(3), probed(4), attempt(5)), true},
		{"the first spawned after a blind retry", seq(attempt(1), attempt(3), spawned(1), probed(2), attempt(5)), false},
	}
	for _, tc := range tests {
		if got := evidence.Of(tc.events, id).ProbedBetween(probe); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
}
