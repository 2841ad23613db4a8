package scorerun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/reconcile/score"
	"github.com/sshrig/sshrig/tool"
)

const (
	// probeSettle is how long a probe's own commands on the target may take
	// to end after the probe did, before they count as left running.
	probeSettle = 2 * time.Second
	// stateBudget bounds producing one state, beyond the probe's timeout.
	stateBudget = time.Minute
)

// Run produces every state on env, runs the probe against each and scores
// it. env is a started target of the rig's (rig.Reconcile opens one with the
// run directory's event log attached, as for sshrig run). Run returns an
// error only when the rig itself could not run (a failed preflight); states
// it could not produce are inconclusive rows. What o leaves out is filled in
// by score.Options.WithDefaults.
func Run(ctx context.Context, env *engine.Env, o score.Options) (*score.Report, error) {
	if strings.TrimSpace(o.Probe) == "" {
		return nil, errors.New("score: no probe command")
	}
	o = o.WithDefaults()
	if !o.Remote {
		// The probe runs through env(1) (see runLocal): a missing env is
		// the rig's problem, better said now than as six crashes.
		if _, err := exec.LookPath("env"); err != nil {
			return nil, fmt.Errorf("score: local probes need env(1): %w", err)
		}
	}
	started := time.Now()
	// A probe gets the identity file; whatever of the key it prints is a
	// finding, and never reaches a report or a transcript.
	keySecrets, err := secret.OfKeyFile(env.Identity())
	if err != nil {
		return nil, fmt.Errorf("score: read the run's key to keep it out of reports: %w", err)
	}
	// The set-up, the operation and the probe are one host's history.
	env.ShareOneHost()
	r := &runner{o: o, env: env, op: *o.Operation, secrets: keySecrets}
	rep := &score.Report{
		Version:      score.ReportVersion,
		Command:      "reconcile",
		Operation:    r.op.Name,
		Probe:        o.Probe,
		Remote:       o.Remote,
		Target:       o.Target,
		Where:        env.Endpoint().Where,
		Ledger:       env.Ready().Ledger,
		Started:      started.UTC(),
		ProbeTimeout: o.ProbeTimeout.String(),
		Matrix:       reconcile.NewMatrix(),
	}

	// The preflight runs the operation once to completion under an id of
	// its own. It proves the chain works before any state is trusted, and
	// it leaves another id's markers in the ledger, so that a probe that
	// ignores the id answers the never-started state wrongly.
	pre := r.produce(ctx, reconcile.CompletedZero, false)
	r.redactRow(&pre)
	rep.Preflight = &pre
	if pre.NotProduced != "" {
		return rep, &score.PreflightError{Reason: "the rig could not run the operation " + r.op.Name + " to completion: " + pre.NotProduced}
	}

	r.scoreAll(ctx, rep)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("score: interrupted: %w", err)
	}
	rep.WrongCells = rep.Matrix.WrongCells()
	rep.WeakCells = rep.Matrix.WeakCells()
	rep.Summary = summarize(rep.Rows, time.Since(started))
	return rep, nil
}

type runner struct {
	o   score.Options
	env *engine.Env
	op  score.Operation

	// Of the state being produced: transcript material, and what the
	// probe's own case showed.
	tx        transcript
	lastProbe probeCase
	sub       *control.Subscription // the still-running state's events

	secrets []secret.Secret // the run's private key, in every printed form
}

// transcript is transcripts/NN-STATE.json: everything about one state.
type transcript struct {
	Row         *score.Row      `json:"row"`
	Command     string          `json:"command"` // the wrapped command
	Ledger      []string        `json:"ledger"`  // the id's marker lines
	Events      []control.Event `json:"events"`
	ProbeEvents []control.Event `json:"probe_events"` // of the probe's own connections
	Setup       string          `json:"setup_output,omitempty"`
	Teardown    string          `json:"teardown_output,omitempty"`
}

func (r *runner) writeTranscript(row score.Row) {
	r.tx.Row = &row
	b, err := json.MarshalIndent(r.tx, "", "  ")
	if err == nil {
		// Set-up and teardown output is the rig's, but redact the whole
		// file anyway: a transcript never carries key material.
		b = secret.Redact(b, secret.ForJSON(r.secrets))
		err = r.o.WriteFile(row.Transcript, append(b, '\n'))
	}
	if err != nil && r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "sshrig: transcript %s: %v\n", row.Transcript, err)
	}
}

// variant is the command variant that produces s.
func variant(s reconcile.Scenario) score.Variant {
	switch s {
	case reconcile.StillRunning:
		return score.Block
	case reconcile.CompletedNonZero:
		return score.Fail
	}
	return score.Succeed
}

// spec is the engine case that produces s: where the transport dies (if at
// all) and what the command does then.
func spec(s reconcile.Scenario, id string) engine.Spec {
	switch s {
	case reconcile.NeverStarted:
		// The exec request reaches the server, the transport is reset
		// before the command starts, and with hangup it never starts.
		return engine.Spec{ID: id, Moment: fault.Exec, Cut: fault.Reset, Disposition: fault.Hangup}
	case reconcile.StartedKilled:
		// No cut: the server kills the command right after its start marker.
		return engine.Spec{ID: id, Moment: fault.None, Disposition: fault.RemoteKill}
	}
	return engine.Spec{ID: id, Moment: fault.None, Disposition: fault.Survive}
}

// produce produces state s under a fresh id and, when probe is set, runs the
// probe against it and grades the answer.
func (r *runner) produce(ctx context.Context, s reconcile.Scenario, probe bool) (row score.Row) {
	start := time.Now()
	id := r.env.NewID()
	row = score.Row{State: s, CorrelationID: id, Expected: s.Want(), Findings: []score.Finding{}, Attempts: []score.Attempt{}}
	r.tx = transcript{Ledger: []string{}}
	r.lastProbe = probeCase{settled: true}
	r.sub = nil
	defer func() { row.DurationMS = time.Since(start).Milliseconds() }()
	sctx, cancel := context.WithTimeout(ctx, stateBudget+r.o.ProbeTimeout)
	defer cancel()
	notProduced := func(why string) score.Row {
		row.NotProduced = "the rig did not produce this state (the rig's fault, not the probe's): " + why
		row.Mark = reconcile.Inconclusive
		row.Answer = nil
		return row
	}

	teardown, why := r.setUp(ctx, sctx, s)
	defer teardown()
	if why != "" {
		return notProduced(why)
	}

	if s == reconcile.StillRunning {
		// Subscribed before the case exists, so no event of it is missed
		// (see truthNow).
		sub := r.env.Control().Subscribe(id)
		defer sub.Close()
		r.sub = sub
	}
	run, err := r.env.Begin(sctx, spec(s, id))
	if err != nil {
		return notProduced("could not set the case up: " + err.Error())
	}
	command, err := run.Wrap(r.op.Command(variant(s)))
	if err != nil {
		run.Finish(sctx, 0)
		return notProduced("could not wrap the operation's command: " + err.Error())
	}
	r.tx.Command = command

	var ev *engine.Evidence
	var finishErr error
	var pr *probeRun
	var truth reconcile.Truth
	if s == reconcile.StillRunning {
		var a score.Attempt
		var nowErr error
		ev, finishErr, pr, truth, a, nowErr = r.whileRunning(sctx, run, id, command, probe)
		row.Attempts = append(row.Attempts, a)
		if nowErr != nil {
			return notProduced("could not establish the truth while the command ran: " + nowErr.Error())
		}
	} else {
		n := 1
		if s == reconcile.ExecutedTwice {
			n = 2 // the same wrapped command, for the same id
		}
		for range n {
			row.Attempts = append(row.Attempts, attempt(sctx, run, command, nil))
		}
		ev, finishErr = run.Finish(sctx, r.o.Settle)
	}

	if why := r.established(&row, ev, finishErr, truth); why != "" {
		return notProduced(why)
	}
	if !probe {
		return row // produced; nothing to grade
	}
	if pr == nil {
		p := r.probe(sctx, id, command)
		pr = &p
	}
	return r.grade(row, pr)
}

// setUp runs the operation's set-up on the target and returns its teardown,
// to run whatever happens (even when interrupted: the set-up may have started
// processes on the target), and why the set-up failed, or "".
func (r *runner) setUp(ctx, sctx context.Context, s reconcile.Scenario) (teardown func(), why string) {
	teardown = func() {}
	if r.op.Setup != "" {
		out, err := r.onTarget(sctx, r.op.Setup)
		r.tx.Setup = out
		if err != nil {
			return teardown, "the operation's set-up failed: " + err.Error()
		}
	}
	if r.op.Teardown != "" {
		teardown = func() {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			out, err := r.onTarget(tctx, r.op.Teardown)
			r.tx.Teardown = out
			if err != nil && r.o.Progress != nil {
				fmt.Fprintf(r.o.Progress, "sshrig: %s: the operation's teardown failed: %v\n", s, err)
			}
		}
	}
	return teardown, ""
}

// established reads the truth of the state row is producing from the case's
// evidence (truth, for still-running, as it stood while the command ran),
// puts it in row, and says why the state was not produced, or "".
func (r *runner) established(row *score.Row, ev *engine.Evidence, finishErr error, truth reconcile.Truth) string {
	if ev != nil {
		r.tx.Events = ev.Events
		r.tx.Ledger = ev.Ledger.Lines(row.CorrelationID)
	}
	switch {
	case ev == nil:
		return "could not establish the truth: " + errText(finishErr)
	case ev.ProbeErr != "":
		return "could not read the ledger: " + ev.ProbeErr
	}
	t := ev.Truth
	if truth.ID != "" {
		t = truth // still-running: the truth while the command ran
	}
	row.Truth = t.Report()
	switch {
	case !ev.Landed:
		return "the cut did not land: " + ev.NotLanded
	case finishErr != nil:
		return "could not end the case: " + finishErr.Error()
	case row.State == reconcile.StillRunning && len(row.Attempts) > 0 && !strings.Contains(row.Attempts[0].Stdout, score.ReadyLine):
		return fmt.Sprintf("the command never said its work was under way (%q on stdout)", score.ReadyLine)
	}
	if err := row.State.Check(t); err != nil {
		return err.Error()
	}
	return ""
}

// grade scores the probe's answer about the state row produced: findings on
// what it printed and did, and its mark. Key material it printed is a finding
// and is redacted first.
func (r *runner) grade(row score.Row, pr *probeRun) score.Row {
	s, id := row.State, row.CorrelationID
	row.Probe = &pr.ProbeRun
	if pr.RigErr != "" {
		row.NotProduced = "the rig could not run the probe (the rig's fault, not the probe's): " + pr.RigErr
		row.Mark = reconcile.Inconclusive
		return row
	}
	// Key material is a finding, and is gone before anything quotes the
	// probe's output (findings cut it short, where a fragment would be
	// harder to recognise).
	leaked := secret.Found([]byte(pr.Stdout+"\n"+pr.Stderr), r.secrets)
	pr.stdout = secret.Redact(pr.stdout, r.secrets)
	pr.Stdout, pr.Stderr = string(pr.stdout), string(secret.Redact([]byte(pr.Stderr), r.secrets))
	answer, findings := judge(*pr, r.o.ProbeTimeout)
	row.Findings = append(row.Findings, findings...)
	row.Findings = append(row.Findings, r.probeCaseFindings(id, pr)...)
	if len(leaked) > 0 {
		row.Findings = append(row.Findings, score.Finding{Kind: score.FindingSecret, Detail: "the probe printed the " + strings.Join(leaked, ", ") + "; the report holds it redacted"})
	}
	row.Answer = answer
	row.Mark = reconcile.Grade(s, answer)
	return row
}

// whileRunning produces the still-running state: the probe must run while
// the command does. It waits until the work is under way (the command printed
// score.ReadyLine, which it does only after its start marker), runs the probe,
// then establishes the truth as it stands — Finish cannot, since it ends the
// case first, killing the command — and only then ends the case.
func (r *runner) whileRunning(sctx context.Context, run *engine.Run, id, command string, probe bool) (ev *engine.Evidence, finishErr error, pr *probeRun, truth reconcile.Truth, a score.Attempt, nowErr error) {
	actx, acancel := context.WithCancel(sctx)
	ready := make(chan struct{})
	done := make(chan score.Attempt, 1)
	go func() { done <- attempt(actx, run, command, ready) }()
	var early *score.Attempt
	select {
	case <-ready:
	case a := <-done:
		early = &a
	case <-sctx.Done():
	}
	if early == nil && sctx.Err() == nil {
		if probe {
			p := r.probe(sctx, id, command)
			pr = &p
		}
		truth, nowErr = r.truthNow(sctx, id)
	}
	ev, finishErr = run.Finish(sctx, 0)
	acancel()
	if early == nil {
		a = <-done
	} else {
		a = *early
	}
	return ev, finishErr, pr, truth, a, nowErr
}

// scoreAll produces each state in turn and grades the probe's answer about
// it, adding the rows and the matrix to rep; it stops when ctx ends.
func (r *runner) scoreAll(ctx context.Context, rep *score.Report) {
	for i, s := range r.o.Scenarios {
		if ctx.Err() != nil {
			return
		}
		row := r.produce(ctx, s, true)
		if ctx.Err() != nil {
			break // what the interruption did to the probe says nothing about it
		}
		r.redactRow(&row)
		if r.o.WriteFile != nil {
			row.Transcript = fmt.Sprintf("transcripts/%02d-%s.json", i+1, s)
			r.writeTranscript(row)
		}
		rep.Rows = append(rep.Rows, row)
		if row.Mark != reconcile.Inconclusive {
			rep.Matrix.Add(s, row.Answer)
		}
		if r.o.Progress != nil {
			fmt.Fprintf(r.o.Progress, "[%d/%d] %-18s %s\n", i+1, len(r.o.Scenarios), s, brief(row))
		}
	}
}

// probeCase is what the probe's own case showed, for findings.
type probeCase struct {
	events  []control.Event
	settled bool
	// left: pids of the probe's process groups on the target still alive
	// after it ended (killed by the rig); sweepErr: the search failed.
	left     []string
	sweepErr string
}

// probe runs the probe for id, over a case of its own: its connections go
// through a cutter that never cuts, so the server attributes them (and their
// commands) to the probe, not to the state, and ending that case kills
// whatever the probe left running on the target.
func (r *runner) probe(ctx context.Context, id, command string) probeRun {
	pcase, err := r.env.Begin(ctx, engine.Spec{ID: r.env.NewID(), Moment: fault.None, Disposition: fault.Survive})
	if err != nil {
		return probeRun{ProbeRun: score.ProbeRun{Where: r.where(), ExitCode: -1, RigErr: "set up the probe's connection: " + err.Error()}}
	}
	var pr probeRun
	if r.o.Remote {
		cmd := reconcile.RemoteCommand(r.o.Probe, r.env.Ready().Shell, id, r.op.Name, r.env.Ready().Ledger)
		pr = runRemote(ctx, pcase, cmd, r.o.ProbeTimeout)
	} else {
		t := tool.Target{
			Addr:          pcase.Addr(),
			User:          r.env.User(),
			Identity:      r.env.Identity(),
			KnownHosts:    pcase.KnownHosts(),
			CorrelationID: id,
			Operation:     r.op.Name,
			Command:       command,
			Deadline:      r.o.ProbeTimeout,
		}
		pr = runLocal(ctx, r.o.Probe, r.env.Ready().Ledger, t, r.o.ProbeTimeout)
	}
	settle := probeSettle
	if pr.Hung {
		settle = 0 // it is being killed: nothing to wait for
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// Ending the case kills the probe's commands still running there
	// (with their process groups).
	ev, _ := pcase.Finish(fctx, settle)
	r.lastProbe = probeCase{settled: true}
	if ev == nil {
		return pr
	}
	r.tx.ProbeEvents = ev.Events
	r.lastProbe = probeCase{events: ev.Events, settled: ev.Settled}
	// A command that ended can leave processes of its group behind (a
	// background job): find and kill them on the target too.
	if pgids := evidence.ProcessGroups(ev.Events); len(pgids) > 0 {
		out, err := r.onTarget(fctx, sweepCommand(pgids))
		if err != nil {
			r.lastProbe.sweepErr = err.Error()
		} else if left := strings.Fields(out); len(left) > 0 {
			r.lastProbe.left = left
		}
	}
	return pr
}

// redactRow removes key material from everything of row that a probe or a
// command printed, before it reaches the report, a transcript or a terminal.
func (r *runner) redactRow(row *score.Row) {
	red := func(s string) string { return string(secret.Redact([]byte(s), r.secrets)) }
	row.NotProduced = red(row.NotProduced)
	if row.Answer != nil {
		a := *row.Answer
		a.Evidence = red(a.Evidence)
		row.Answer = &a
	}
	for i := range row.Findings {
		row.Findings[i].Detail = red(row.Findings[i].Detail)
	}
	if row.Probe != nil {
		p := *row.Probe
		p.Stdout, p.Stderr, p.Err = red(p.Stdout), red(p.Stderr), red(p.Err)
		row.Probe = &p
	}
	for i := range row.Attempts {
		row.Attempts[i].Stdout = red(row.Attempts[i].Stdout)
		row.Attempts[i].Err = red(row.Attempts[i].Err)
	}
}

func (r *runner) where() string {
	if r.o.Remote {
		return "remote"
	}
	return "local"
}

// probeCaseFindings judges what the probe did on the target.
func (r *runner) probeCaseFindings(id string, pr *probeRun) []score.Finding {
	var out []score.Finding
	if reran := evidence.Of(r.lastProbe.events, id).Received(); reran > 0 {
		out = append(out, score.Finding{Kind: score.FindingReran, Detail: fmt.Sprintf("the probe sent the operation's command for %s to the target %d time(s); a probe inspects, it never runs the operation", id, reran)})
	}
	if !r.lastProbe.settled && !pr.Hung {
		out = append(out, score.Finding{Kind: score.FindingLeftRunning, Detail: fmt.Sprintf("commands the probe ran on the target were still running %s after it ended; the rig killed them", probeSettle)})
	}
	if len(r.lastProbe.left) > 0 {
		out = append(out, score.Finding{Kind: score.FindingLeftRunning, Detail: fmt.Sprintf("processes %s of the probe's process groups on the target were still running after it ended; the rig killed them", strings.Join(r.lastProbe.left, " "))})
	}
	if r.lastProbe.sweepErr != "" {
		out = append(out, score.Finding{Kind: score.FindingLeftRunning, Detail: "the rig could not check the target for processes the probe left behind: " + r.lastProbe.sweepErr})
	}
	return out
}

// truthNow establishes the truth for id as it stands, without ending its
// case, with engine.Env.TruthNow: the same two sources and derivation as
// engine.Run.Finish. A ping's reply follows every event the server emitted before it,
// and the control client queues events on r.sub before it hands out the
// reply, so after the ping r.sub holds every event of the case up to now.
func (r *runner) truthNow(ctx context.Context, id string) (reconcile.Truth, error) {
	if err := r.env.Control().Do(ctx, control.Request{Op: control.OpPing}); err != nil {
		return reconcile.Truth{}, err
	}
	drained, cancel := context.WithCancel(ctx)
	cancel() // Next returns what is queued, then fails instead of waiting
	var events []control.Event
	for {
		e, err := r.sub.Next(drained)
		if err != nil {
			break
		}
		events = append(events, e)
	}
	return r.env.TruthNow(ctx, id, events)
}

// onTarget runs command on the target, outside any state: over a case of its
// own with no cut. It returns the command's output; an error when it could
// not run or exited non-zero.
func (r *runner) onTarget(ctx context.Context, command string) (string, error) {
	run, err := r.env.Begin(ctx, engine.Spec{ID: r.env.NewID(), Moment: fault.None, Disposition: fault.Survive})
	if err != nil {
		return "", err
	}
	pr := runRemote(ctx, run, "{\n"+command+"\n} 2>&1", stateBudget)
	if _, err := run.Finish(ctx, r.o.Settle); err != nil && pr.Err == "" {
		pr.Err = "end: " + err.Error()
	}
	switch {
	case pr.RigErr != "":
		return pr.Stdout, errors.New(pr.RigErr)
	case pr.Err != "":
		return pr.Stdout, errors.New(pr.Err)
	case pr.Hung:
		return pr.Stdout, fmt.Errorf("no exit within %s", stateBudget)
	case pr.Signal != "":
		return pr.Stdout, fmt.Errorf("killed by %s; output: %s", pr.Signal, strings.TrimSpace(pr.Stdout))
	case pr.ExitCode != 0:
		return pr.Stdout, fmt.Errorf("exit %d; output: %s", pr.ExitCode, strings.TrimSpace(pr.Stdout))
	}
	return pr.Stdout, nil
}

func errText(err error) string {
	if err == nil {
		return "no evidence"
	}
	return err.Error()
}

// summarize counts rows by mark, for a run that took d.
func summarize(rows []score.Row, d time.Duration) score.Summary {
	s := score.Summary{States: len(rows), DurationMS: d.Milliseconds()}
	for _, row := range rows {
		switch row.Mark {
		case reconcile.Correct:
			s.Correct++
		case reconcile.Weak:
			s.Weak++
		case reconcile.Wrong:
			s.Wrong++
		case reconcile.NoAnswer:
			s.NoAnswer++
		case reconcile.Inconclusive:
			s.Inconclusive++
		}
		if row.Mark != reconcile.Inconclusive && len(row.Findings) > 0 {
			s.WithFindings++
		}
	}
	return s
}

// brief is a row in a few words, for progress lines.
func brief(row score.Row) string {
	switch {
	case row.Mark == reconcile.Inconclusive:
		return "inconclusive: " + row.NotProduced
	case row.Answer == nil:
		return fmt.Sprintf("%-9s %s", row.Mark, score.FindingsText(row.Findings))
	}
	s := fmt.Sprintf("%-9s probe said %s", row.Mark, row.Answer.State)
	if len(row.Findings) > 0 {
		s += "; " + score.FindingsText(row.Findings)
	}
	return s
}
