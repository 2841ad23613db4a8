package rig

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/fault"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/reconcile"
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
func reconciledCase(t *testing.T, m fault.Moment, d fault.Disposition) Case {
	t.Helper()
	cases, err := Select(DefaultMatrix(), []string{"reconciled.started.reset.survive"})
	if err != nil || len(cases) != 1 || cases[0].ReconcileProbe == "" {
		t.Fatalf("no reconcile-probe case in the default matrix: %v", err)
	}
	c := cases[0]
	c.ID, c.Alias, c.Moment, c.Disposition = m.String()+".reset."+d.String()+".reconciled", "", m, d
	return c
}

func blindRetry(c *CaseReport) bool {
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
		c          Case
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
			rep, err := Run(ctx, Options{Tool: tc.tool, Cases: []Case{tc.c}})
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
			if !tc.wantBlind && (c.Verdict != verdict.Pass || c.Reported == nil || c.Reported.Category != result.Succeeded) {
				t.Fatalf("reconciled retry: verdict %s, reported %+v, violations %+v", c.Verdict, c.Reported, c.Violations)
			}
		})
	}
}

func TestProbedBetween(t *testing.T) {
	const id, probe = "c-1", "probe-digest"
	exec := func(conn int, marker, digest string) control.Event {
		return control.Event{Kind: control.ExecReceived, Conn: conn, Session: 1, MarkerID: marker, Digest: digest}
	}
	spawned := control.Event{Kind: control.ProcSpawned, Conn: 1, Session: 1, PID: 42}
	tests := []struct {
		name   string
		events []control.Event
		want   bool
	}{
		{"probe before the retry, nothing started", []control.Event{exec(1, id, ""), exec(2, "", probe), exec(3, id, "")}, true},
		{"probe found it started", []control.Event{exec(1, id, ""), spawned, exec(2, "", probe), exec(3, id, "")}, false},
		{"no probe", []control.Event{exec(1, id, ""), exec(3, id, "")}, false},
		{"probe before the first attempt", []control.Event{exec(2, "", probe), exec(1, id, ""), exec(3, id, "")}, false},
		{"another command, not the probe", []control.Event{exec(1, id, ""), exec(2, "", "other"), exec(3, id, "")}, false},
	}
	for _, tc := range tests {
		if got := probedBetween(tc.events, id, probe); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
}
