package rig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/capbuf"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Defaults for Options.
const (
	DefaultBudget = 5 * time.Second // the deadline a tool gets per case
	DefaultGrace  = 2 * time.Second // beyond the budget, before a tool counts as hung
	DefaultSettle = 5 * time.Second // for the remote command to end before the probe
	// maxStdout bounds what the rig keeps of a tool's stdout: a result is
	// at most result.MaxSize, so one byte more proves it too large.
	maxStdout = result.MaxSize + 1
	maxStderr = 1 << 20
)

// Options configure a run.
type Options struct {
	Tool     tool.Tool
	Cases    []Case
	Parallel int           // cases at once; default 1
	Budget   time.Duration // default DefaultBudget
	Grace    time.Duration // default DefaultGrace
	Settle   time.Duration // default DefaultSettle
	Launcher engine.Launcher
	// Target names the target in reports ("embedded", "container").
	Target string
	// Out receives the run directory's files; nil writes nothing.
	Out *RunDir
	// Progress, when not nil, gets one line per finished case.
	Progress io.Writer
	// Repeat, when on, runs each case many times in a drawn order
	// (rig/repeat.go).
	Repeat Repeat
}

func (o *Options) defaults() {
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.Settle == 0 {
		o.Settle = DefaultSettle
	}
	if o.Launcher == nil {
		o.Launcher = engine.InProcess{}
	}
	if o.Target == "" {
		o.Target = "embedded"
	}
}

// PreflightError means the chain is not invocable: the run stops before any case.
type PreflightError struct {
	Reason string
	Case   *CaseReport // the preflight's own record, when it got that far
}

func (e *PreflightError) Error() string { return "preflight: " + e.Reason }

// ErrNoCases is returned for a run with nothing to execute.
var ErrNoCases = errors.New("rig: no cases to run")

// Run runs the cases. It returns an error only when the rig itself could not
// run (the server did not start, the preflight failed); verdicts are in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	if len(o.Cases) == 0 {
		return nil, ErrNoCases
	}
	if o.Tool == nil {
		return nil, errors.New("rig: no tool")
	}
	started := time.Now()
	env, err := engine.Start(ctx, engine.Options{Launcher: o.Launcher})
	if err != nil {
		return nil, fmt.Errorf("rig: start server: %w", err)
	}
	defer env.Close()
	secrets, err := secret.WithPath(env.Identity())
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	r := &runner{o: o, env: env, secrets: secrets}
	if o.Out != nil {
		o.Out.AddSecrets(secrets)
		tap := env.Control().Tap()
		r.tapDone = make(chan struct{})
		go r.logEvents(tap)
		defer func() { tap.Close(); <-r.tapDone }()
	}

	rep := &Report{
		Version: ReportVersion,
		Tool:    o.Tool.Name(),
		Target:  o.Target,
		Where:   env.Endpoint().Where,
		Started: started.UTC(),
		Budget:  o.Budget.String(),
	}

	pre := r.preflight(ctx)
	rep.Preflight = pre
	if pre.Error != "" {
		return rep, &PreflightError{Reason: pre.Error, Case: pre.Case}
	}

	var reports []CaseReport
	idWidth := 0 // progress lines align on the longest id
	for _, c := range o.Cases {
		idWidth = max(idWidth, len(c.ID))
	}
	sched := newSchedule(o, started) // rig/repeat.go: which case runs, in which order
	type job struct {
		i int
		c Case
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var done int
	var mu sync.Mutex
	for w := 0; w < sched.parallel; w++ {
		wg.Go(func() {
			for j := range jobs {
				cr := r.runCase(ctx, j.c)
				mu.Lock()
				reports[j.i] = cr
				done++
				switch {
				case o.Repeat.On():
					sched.progress(o.Progress, done, cr, time.Now())
				case o.Progress != nil:
					fmt.Fprintf(o.Progress, "[%d/%d] %-*s %s\n", done, len(o.Cases), idWidth, cr.ID, cr.Verdict)
				}
				mu.Unlock()
			}
		})
	}
	for ctx.Err() == nil {
		c, ok := sched.next(time.Now())
		if !ok {
			break
		}
		mu.Lock()
		reports = append(reports, CaseReport{})
		i := len(reports) - 1
		mu.Unlock()
		jobs <- job{i, c}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("rig: interrupted: %w", err)
	}
	rep.Cases = reports
	rep.summarize(time.Since(started))
	rep.aggregate(o, sched) // rig/aggregate.go: rates of a repeated run
	return rep, nil
}

// log writes an entry of the rig's to the run's event log, if it keeps one.
func (r *runner) log(source, event, correlationID string, data map[string]any) {
	if r.o.Out != nil {
		r.o.Out.Log(source, event, correlationID, data)
	}
}

type runner struct {
	o       Options
	env     *engine.Env
	secrets []verdict.Secret
	tapDone chan struct{}
}

func (r *runner) logEvents(tap *control.Subscription) {
	defer close(r.tapDone)
	for {
		e, err := tap.Next(context.Background())
		if err != nil {
			return
		}
		r.o.Out.LogEvent(e)
	}
}

// toolRun is what one invocation of the tool produced.
type toolRun struct {
	stdout, stderr []byte
	stdoutBytes    int64 // all the tool printed on stdout
	duration       time.Duration
	hung           bool
	exit           *tool.ProcessExit // for tools that run as programs
}

// invoke runs the tool against the case and gives up on it after the budget
// plus grace. A hung in-process tool is released when the case ends and its
// connections close; invoke's caller waits for that.
func (r *runner) invoke(ctx context.Context, run *engine.Run, t tool.Target) (toolRun, <-chan struct{}) {
	defer run.ToolReturned() // a stalled answer is released once the tool gave up
	tctx, cancel := context.WithTimeout(ctx, t.Deadline+r.o.Grace)
	stdout, stderr := capbuf.New(maxStdout), capbuf.New(maxStderr)
	done := make(chan struct{})
	start := time.Now()
	var tr toolRun
	go func() {
		defer close(done)
		if p, ok := r.o.Tool.(tool.Process); ok {
			exit := p.RunProcess(tctx, t, stdout, stderr, run.SetToolPID)
			tr.exit = &exit
			return
		}
		r.o.Tool.Run(tctx, t, stdout, stderr)
	}()
	select {
	case <-done:
	case <-tctx.Done():
		tr.hung = ctx.Err() == nil
		if _, ok := r.o.Tool.(tool.Process); ok {
			// Its process group is being killed; the exit is on its way.
			<-done
		}
	}
	tr.duration = time.Since(start)
	cancel()
	tr.stdout, tr.stderr = stdout.Bytes(), stderr.Bytes()
	tr.stdoutBytes = stdout.Total()
	return tr, done
}

func (r *runner) target(run *engine.Run, c Case) (tool.Target, error) {
	cmd, err := run.Wrap(c.Workload(run.Spec().ID))
	if err != nil {
		return tool.Target{}, err
	}
	t := tool.Target{
		Addr:          run.Addr(),
		User:          r.env.User(),
		Identity:      run.Identity(),
		Certificate:   run.Certificate(),
		KnownHosts:    run.KnownHosts(),
		CorrelationID: run.Spec().ID,
		Operation:     c.Operation,
		Command:       cmd,
		Deadline:      r.budget(c),
	}
	if c.Draw != nil {
		t.Seed = c.Draw.Seed
	}
	if c.Scenario == ScenarioRecordNote {
		t.Lookup = operations.Lookup(run.Spec().ID)
		t.FollowUp = operations.FollowUpTemplate
	}
	if c.ReconcileProbe != "" {
		ready := r.env.Ready()
		t.Reconcile = reconcile.RemoteCommand(c.ReconcileProbe, ready.Shell, run.Spec().ID, c.Operation, ready.Ledger)
	}
	return t, nil
}

func (r *runner) budget(c Case) time.Duration {
	if c.Budget > 0 {
		return c.Budget
	}
	return r.o.Budget
}

// runCase runs one case to its verdict. Infrastructure trouble in one case
// makes that case inconclusive; it does not stop the run.
func (r *runner) runCase(ctx context.Context, c Case) CaseReport {
	start := time.Now()
	id := r.env.NewID()
	cr := CaseReport{ID: c.ID, Alias: c.Alias, Moment: c.Moment.String(), Cut: cutName(c), Disposition: c.Disposition.String(),
		Tool: r.o.Tool.Name(), CorrelationID: id, Operation: c.Operation, Violations: []verdict.Violation{}, Draw: c.Draw}
	knowledge := fault.KnowledgeAt(c.Moment, c.Cut)
	cat, retry := verdict.Honest(knowledge, &verdict.Delivered{ExitCode: c.ExitCode})
	cr.Expected = Expected{Category: cat, Retry: retry}
	if ok, why := Applies(c, r.o.Tool); !ok {
		cr.Verdict, cr.Reason = verdict.Skipped, why
		return cr
	}
	inconclusive := func(why string) CaseReport {
		cr.Verdict, cr.Reason = verdict.Inconclusive, why+r.serverGone(ctx)
		cr.DurationMS = time.Since(start).Milliseconds()
		return cr
	}

	if r.o.Out != nil {
		r.o.Out.Bind(id, c.ID)
	}
	run, err := r.env.Begin(ctx, c.spec(id))
	if err != nil {
		return inconclusive("could not set the case up: " + err.Error())
	}
	t, err := r.target(run, c)
	if err != nil {
		run.Finish(ctx, 0)
		return inconclusive("could not wrap the workload: " + err.Error())
	}
	built := map[string]any{"operation": c.Operation, "moment": c.Moment.String(), "cut": cutName(c),
		"disposition": c.Disposition.String(), "command_sha256": sha256Hex(t.Command), "deadline_ms": t.Deadline.Milliseconds()}
	if r.o.Out != nil && r.o.Out.LogCommands {
		built["command"] = t.Command
	}
	r.log(eventlog.SourceRig, "request_built", id, built)
	r.log(eventlog.SourceRig, "dispatch_started", id, map[string]any{"tool": r.o.Tool.Name()})
	tr, toolDone := r.invoke(ctx, run, t)
	returned := map[string]any{"duration_ms": tr.duration.Milliseconds(), "hung": tr.hung, "stdout_bytes": tr.stdoutBytes}
	if tr.exit != nil {
		returned["exit_code"], returned["pid"] = tr.exit.ExitCode, tr.exit.PID
		if tr.exit.Signal != "" {
			returned["signal"] = tr.exit.Signal
		}
	}
	r.log(eventlog.SourceTool, "tool_returned", id, returned)
	if tr.exit != nil && tr.exit.StartErr != "" {
		run.Finish(ctx, 0)
		return inconclusive("could not start the tool: " + tr.exit.StartErr)
	}
	ev, err := run.Finish(ctx, r.o.Settle)
	// The case's connections are closed now, so a hung in-process tool
	// has returned or is about to.
	select {
	case <-toolDone:
	case <-time.After(10 * time.Second):
		cr.Reason = "the tool did not stop within 10s of its case ending"
	}
	if err != nil && ev == nil {
		return inconclusive("could not finish the case: " + err.Error())
	}
	if ev.Cut != nil && ev.Cut.NoHelper {
		cr.Verdict, cr.Reason = verdict.Skipped, "kill-helper needs a helper process that owns the tool's SSH socket (such as the ssh child of a wrapper); this tool holds its socket itself"
		cr.DurationMS = time.Since(start).Milliseconds()
		return cr
	}

	secrets := r.secrets
	if t.Identity != r.env.Identity() {
		// The case's own key is as secret as the run's.
		if own, err := secret.OfKeyFile(t.Identity); err == nil {
			secrets = append(append([]verdict.Secret(nil), secrets...), own...)
			if r.o.Out != nil {
				r.o.Out.AddSecrets(own)
			}
		}
	}
	if ev.Cut != nil {
		r.log(eventlog.SourceRig, "cut", id, map[string]any{"moment": ev.Cut.Moment.String(), "cut": cutName(c), "conn": ev.Cut.Conn,
			"latency_us": ev.Cut.Latency.Microseconds(), "landed": ev.Landed, "not_landed": ev.NotLanded})
	}
	probe := map[string]any{"state": string(ev.Truth.State), "starts": ev.Truth.Starts, "completes": ev.Truth.Completes,
		"agree": ev.Truth.Agree(), "settled": ev.Settled}
	if ev.Truth.ExitCode != nil {
		probe["exit_code"] = *ev.Truth.ExitCode
	}
	if ev.ProbeErr != "" {
		probe["error"] = ev.ProbeErr
	}
	r.log(eventlog.SourceRig, "reconcile_probe", id, probe)
	observed := map[string]any{}
	if rr, perr := result.Parse(tr.stdout); perr != nil {
		observed["parse_error"] = perr.Error()
	} else {
		observed["ok"], observed["category"], observed["retry"], observed["correlation_id"] = rr.OK, string(rr.Category), string(rr.Retry), rr.CorrelationID
	}
	r.log(eventlog.SourceRig, "result", id, observed)
	in := verdict.Input{
		Moment:            c.Moment,
		Cut:               c.Cut,
		Expect:            c.Expectation(),
		CorrelationID:     id,
		Operation:         c.Operation,
		Stdout:            tr.stdout,
		StdoutBytes:       tr.stdoutBytes,
		Stderr:            tr.stderr,
		Duration:          tr.duration,
		Budget:            t.Deadline,
		Hung:              tr.hung,
		Landed:            ev.Landed,
		NotLanded:         ev.NotLanded,
		Attempts:          attempts(ev.Events, id),
		CredentialRetries: credentialRetries(ev.Events),
		Secrets:           secrets,
	}
	if c.Fixture != "" {
		in.FollowUps = followUps(ev.Events, id, t.Reconcile)
	}
	if t.Reconcile != "" && c.Scenario == "" {
		in.ProbedBetween = probedBetween(ev.Events, id, sha256Hex(t.Reconcile))
		if in.ProbedBetween {
			in.RetryDelivered = lastDelivered(ev.Events, id)
		}
	}
	if c.Scenario != "" {
		in.Steps, in.ProbedBetween = scenarioSteps(ev.Events, t, id)
		in.FirstUnknown = ev.Landed && knowledge == fault.RequestSent
	}
	if r.o.Out != nil {
		in.Log = &verdict.LogRecord{CorrelationID: r.o.Out.Logged(id, "request_built"), Result: r.o.Out.Logged(id, "result")}
	}
	if c.Credential != 0 {
		if why := credentialTested(ev.Events); why != "" {
			in.Landed, in.NotLanded = false, why
		}
	}
	if knowledge == fault.ResultReceived || c.Fixture != "" {
		in.Delivered = delivered(ev.Events)
	}
	if tr.exit != nil {
		in.LeftRunning = tr.exit.LeftRunning
	}
	if ev.ProbeErr != "" {
		in.TruthErr = ev.ProbeErr
	} else {
		truth := ev.Truth
		in.Truth = &truth
	}
	v := verdict.Judge(in)
	if in.Delivered != nil {
		cat, retry := verdict.Honest(knowledge, in.Delivered)
		cr.Expected = Expected{Category: cat, Retry: retry}
	}
	// The report never carries key material, even when the tool printed it.
	cr.Verdict, cr.Grade, cr.Violations, cr.Steps = v.Status, v.Grade, v.Violations, v.Path
	for i := range cr.Violations {
		// Details quote what the tool printed (an id, a parse error).
		cr.Violations[i].Detail = string(secret.Redact([]byte(cr.Violations[i].Detail), secrets))
	}
	cr.Reported = redactResult(v.Reported, secrets)
	cr.ParseError = string(secret.Redact([]byte(v.ParseError), secrets))
	if e := in.Expect; e != nil {
		cr.Expected = Expected{Category: e.Category, Retry: e.Retry}
	}
	if v.Reason != "" {
		cr.Reason = v.Reason
	}
	cr.Truth = truthReport(ev.Truth, ev.ProbeErr == "")
	rules := []string{}
	for _, x := range v.Violations {
		rules = append(rules, x.Assertion+"/"+x.Rule)
	}
	r.log(eventlog.SourceRig, "verdict", id, map[string]any{"verdict": string(v.Status), "grade": string(v.Grade), "violations": rules})
	cr.DurationMS = time.Since(start).Milliseconds()
	cr.ToolMS = tr.duration.Milliseconds()
	if ev.Cut != nil {
		cr.CutLatencyUS = ev.Cut.Latency.Microseconds()
	}
	if r.o.Out != nil {
		cr.Transcript = r.o.Out.WriteTranscript(c, cr, t, tr, ev, secrets)
	}
	return cr
}

func cutName(c Case) string {
	switch {
	case c.Stall:
		return "stall"
	case c.Moment == fault.None || c.Moment == fault.Refuse:
		return ""
	}
	return c.Cut.String()
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// serverGone explains, when the server is no longer running (a container
// that died), why, with its last log lines; otherwise "".
func (r *runner) serverGone(ctx context.Context) string {
	ep := r.env.Endpoint()
	if ep.Alive == nil {
		return ""
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	alive, why := ep.Alive(actx)
	if alive {
		return ""
	}
	msg := "; the server is gone: " + why
	if ep.Logs != nil {
		if logs := strings.TrimSpace(ep.Logs()); logs != "" {
			msg += "; its last log lines:\n" + logs
		}
	}
	return msg
}

// scenarioSteps classifies, in the server's order, the commands the tool ran
// for a step sequence: the create (by its marker id), the lookup, the case's
// reconcile probe (a lookup too: it reads and changes nothing) and the note
// on the true record (by digest); anything else is unknown. A lookup found
// the record when a create had exited 0 before it arrived. probed says a
// lookup ran between the first create and a later one.
func scenarioSteps(events []control.Event, t tool.Target, id string) (steps []verdict.Step, probed bool) {
	lookup, note := sha256Hex(t.Lookup), sha256Hex(operations.FollowUp(operations.RecordID(id)))
	probe := ""
	if t.Reconcile != "" {
		probe = sha256Hex(t.Reconcile)
	}
	type key struct{ conn, session int }
	createPIDs := map[int]key{}
	creating := map[key]bool{}
	// unsettled: creates that could still run — the request held, or the
	// command running. A lookup meanwhile finds nothing for now only.
	unsettled := map[key]bool{}
	created := false
	for _, e := range events {
		k := key{e.Conn, e.Session}
		switch e.Kind {
		case control.ExecReceived:
			switch {
			case e.MarkerID == id:
				steps = append(steps, verdict.Step{Op: verdict.StepCreate})
				creating[k], unsettled[k] = true, true
			case e.Digest == lookup, probe != "" && e.Digest == probe:
				steps = append(steps, verdict.Step{Op: verdict.StepLookup, Found: created, Pending: !created && len(unsettled) > 0})
			case e.Digest == note:
				steps = append(steps, verdict.Step{Op: verdict.StepNote})
			default:
				steps = append(steps, verdict.Step{Op: verdict.StepUnknown})
			}
		case control.ProcSpawned:
			if creating[k] {
				createPIDs[e.PID] = k
			}
		case control.ProcExited:
			if ck, ok := createPIDs[e.PID]; ok {
				delete(unsettled, ck)
				if e.ExitCode != nil && *e.ExitCode == 0 {
					created = true
				}
			}
		case control.ExecSkipped, control.ExecFinished, control.ExecRefused:
			delete(unsettled, k)
		}
	}
	seenCreate, lookedUp := false, false
	for _, s := range steps {
		switch s.Op {
		case verdict.StepCreate:
			if seenCreate && lookedUp {
				probed = true
			}
			seenCreate = true
		case verdict.StepLookup:
			lookedUp = seenCreate
		}
	}
	return steps, probed
}

// followUps counts exec requests other than the operation's own command and
// the case's reconcile probe (reconcile, when not empty).
func followUps(events []control.Event, id, reconcile string) int {
	probe := ""
	if reconcile != "" {
		probe = sha256Hex(reconcile)
	}
	n := 0
	for _, e := range events {
		if e.Kind == control.ExecReceived && e.MarkerID != id && (probe == "" || e.Digest != probe) {
			n++
		}
	}
	return n
}

// credentialRetries counts the connections, beyond the first, on which the
// server rejected a key.
func credentialRetries(events []control.Event) int {
	conns := map[int]bool{}
	for _, e := range events {
		if e.Kind == control.AuthRejected {
			conns[e.Conn] = true
		}
	}
	return max(0, len(conns)-1)
}

// credentialTested says why a credential case tested nothing: the events
// must show the credential accepted (at set-up) before it was rejected.
func credentialTested(events []control.Event) string {
	accepted := false
	for _, e := range events {
		switch e.Kind {
		case control.AuthAccepted:
			accepted = true
		case control.AuthRejected:
			if !accepted {
				return "the credential was rejected before it was ever accepted: a credential that never worked tests nothing"
			}
			return ""
		}
	}
	if !accepted {
		return "the server never accepted the case's credential at set-up"
	}
	return "" // accepted and never rejected: the tool's report is judged as it is
}

// attempts counts the exec requests carrying id's markers that reached the
// server, run or refused.
func attempts(events []control.Event, id string) int {
	n := 0
	for _, e := range events {
		if (e.Kind == control.ExecReceived || e.Kind == control.ExecRefused) && e.MarkerID == id {
			n++
		}
	}
	return n
}

// probedBetween says every attempt for id after the first was reconciled:
// since the attempt before it, the case's reconcile probe (by its digest) ran
// to its exit status at a time when every earlier attempt's exec request had
// ended without the server starting the command. Only then can the probe's
// "not started" be true for good; a probe that ran while an earlier request
// was still held (it could start after the probe looked), or after the
// command had started, justifies nothing. A refused probe ran nothing.
func probedBetween(events []control.Event, id, probe string) bool {
	type key struct{ conn, session int }
	type attempt struct{ ended, spawned bool }
	tries := map[key]*attempt{}
	probes := map[key]bool{}
	order, reconciled := 0, false
	settled := func() bool { // every attempt so far ended and never started
		for _, a := range tries {
			if !a.ended || a.spawned {
				return false
			}
		}
		return true
	}
	for _, e := range events {
		k := key{e.Conn, e.Session}
		switch e.Kind {
		case control.ExecReceived, control.ExecRefused:
			switch {
			case e.MarkerID == id:
				if order > 0 && !reconciled {
					return false
				}
				order++
				reconciled = false
				tries[k] = &attempt{ended: e.Kind == control.ExecRefused}
			case e.Kind == control.ExecReceived && e.Digest == probe && order > 0:
				probes[k] = true
			}
		case control.ProcSpawned:
			if a := tries[k]; a != nil {
				a.spawned = true
			}
		case control.ExecSkipped, control.ExecFinished:
			if a := tries[k]; a != nil {
				a.ended = true
			}
		case control.ExitSent:
			if probes[k] && settled() {
				reconciled = true
			}
		}
	}
	return order > 1
}

// lastDelivered is what the server delivered to the last attempt for id
// (its exec request's session), nil when it delivered nothing.
func lastDelivered(events []control.Event, id string) *verdict.Delivered {
	type key struct{ conn, session int }
	var last key
	var got *verdict.Delivered
	for _, e := range events {
		k := key{e.Conn, e.Session}
		switch {
		case (e.Kind == control.ExecReceived || e.Kind == control.ExecRefused) && e.MarkerID == id:
			last, got = k, nil
		case e.Kind == control.ExitSent && k == last:
			d := &verdict.Delivered{Signal: e.Signal}
			if e.ExitCode != nil {
				d.ExitCode = *e.ExitCode
			}
			got = d
		}
	}
	return got
}

// delivered is the result the server delivered before the cut, from its own events.
func delivered(events []control.Event) *verdict.Delivered {
	for _, e := range events {
		if e.Kind == control.ExitSent {
			d := &verdict.Delivered{Signal: e.Signal}
			if e.ExitCode != nil {
				d.ExitCode = *e.ExitCode
			}
			return d
		}
	}
	return nil
}

// preflight proves the chain is invocable before any case runs.
func (r *runner) preflight(ctx context.Context) Preflight {
	c := Case{ID: "preflight", Moment: fault.None, Disposition: fault.Survive, Operation: DefaultOperation}
	cr := r.runCase(ctx, c)
	p := Preflight{Case: &cr}
	switch {
	case cr.ParseError != "":
		p.Error = "the tool's result does not parse: " + cr.ParseError
	case cr.Reported == nil && cr.Reason != "":
		p.Error = cr.Reason
	case cr.Reported == nil:
		p.Error = "the tool printed no result"
	case cr.Reported.Category != result.Succeeded:
		p.Error = fmt.Sprintf("the tool reported %s/%s on a case with no fault: %s", cr.Reported.Category, cr.Reported.Retry, cr.Reported.Message)
	case cr.Truth == nil || cr.Truth.Starts != 1 || cr.Truth.Completes != 1:
		p.Error = "the ledger does not show exactly one start and one complete for the preflight's id"
		if cr.Truth != nil {
			p.Error += fmt.Sprintf(" (starts %d, completes %d)", cr.Truth.Starts, cr.Truth.Completes)
		}
	}
	return p
}

func truthReport(t reconcile.Truth, established bool) *reconcile.TruthReport {
	if !established {
		return nil
	}
	return t.Report()
}
