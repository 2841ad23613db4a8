package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/capbuf"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reading"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Defaults for Options.
const (
	DefaultBudget = 5 * time.Second // the deadline a tool gets per case
	DefaultGrace  = 2 * time.Second // beyond the budget, before a tool counts as hung
	DefaultSettle = 5 * time.Second // for the remote command to end before the probe
	// DefaultParallel is the most cases a run starts at once unless told
	// otherwise (fewer when the tool's cases would starve: rig/sizing.go).
	// Chosen by measurement, not by core count: a case mostly waits (a
	// blackhole case for the tool's liveness deadline, c05 its whole
	// budget), and beyond 16 the default matrix gains little while every
	// verdict stays exact under load (docs/performance.md, "The default
	// matrix", has the figures).
	DefaultParallel = 16
	// maxStdout bounds what the rig keeps of a tool's stdout: a result is
	// at most result.MaxSize, so one byte more proves it too large.
	maxStdout = result.MaxSize + 1
	maxStderr = 1 << 20
)

// Options configure a run.
type Options struct {
	Tool tool.Tool
	// Reading, when set, reads each case run's result from the tool's own
	// report (its exit code, signal and output) instead of a result it
	// prints (rig/readings.go); for exec tools.
	Reading  *reading.Reading
	Cases    []matrix.Case
	Parallel int           // cases at once (1: one at a time); 0 sizes it to the tool and the machine (rig/sizing.go)
	Budget   time.Duration // default DefaultBudget
	Grace    time.Duration // default DefaultGrace
	Settle   time.Duration // default DefaultSettle
	// Target is where the SSH server runs; the zero value is the embedded
	// target.
	Target Target
	// Net is where the tool meets the server (docs/network.md): NetProxy,
	// the default, or NetKernel.
	Net Net
	// Hosts, when 2 or more, runs every case on a fleet of that many hosts
	// (rig/fleet.go, matrix.FleetMatrix), the preflight's included: one
	// tool invocation for all of them, each host judged on its own.
	Hosts int
	// Jump: the tool reaches every host through a jump host (a bastion;
	// the server is both, docs/network.md), the preflight's included.
	// Every case must then name the hop it cuts (matrix.JumpMatrix), and
	// without Jump none may.
	Jump bool
	// Out, when not nil, receives the run directory's files: the event log,
	// a transcript per case and, when the run ends, report.json with the
	// log's head. Nil leaves nothing behind: the event log assertion 4 is
	// judged on is kept in a temporary directory, removed when Run returns.
	Out *RunDir
	// Progress, when not nil, gets one line per finished case.
	Progress io.Writer
	// RefusePTY makes the server refuse every pty-req, the preflight's
	// included, as an sshd with PermitTTY no does: a tool that cannot work
	// without a terminal fails the preflight, which names the refusal.
	RefusePTY bool
	// Repeat, when on, runs each case many times in a drawn order
	// (rig/repeat.go).
	Repeat Repeat
	// Shard, when set, is recorded in the report: Cases are this shard's
	// part of a selection split across machines (matrix/shard.go).
	Shard *report.ShardReport
	// JUnit is recorded in the report: the caller writes JUnit XML too.
	JUnit bool
	// StepCases selects the step cases the run adds after the preflight,
	// made from the tool's conversation (matrix/stepcases.go); the zero value
	// adds none. A sharded run adds none: each shard's preflight would add
	// the same ones.
	StepCases matrix.StepSelection

	// machineWait starts a clock of how long the machine made a case wait
	// (rig/machinewait.go); nil is the machine's own. Tests that play a
	// starved tool say the machine was busy.
	machineWait func() func() (time.Duration, bool)
	// confirmWithinRun makes a confirmation alone hold back only this run's
	// cases (rig/confirm.go), for tests that run a defective tool beside
	// others: its alone runs cannot turn a failure into a pass, and its
	// hangs would otherwise hold back every run of the process.
	confirmWithinRun bool
}

func (o *Options) defaults() {
	if o.Parallel < 1 {
		o.Parallel = DefaultParallel
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
}

// Net is where the tool meets the server: the proxy on the rig's loopback
// (NetProxy, the default), or the kernel network (NetKernel): the tool in a
// network namespace of its own, blackhole, reset and vanish made by the
// kernel (docs/network.md).
type Net = engine.Net

// The networks.
const (
	NetProxy  = engine.NetProxy
	NetKernel = engine.NetKernel
)

// ParseNet parses a --net value.
func ParseNet(s string) (Net, error) { return engine.ParseNet(s) }

// ErrNoCases is returned for a run with nothing to execute.
var ErrNoCases = errors.New("rig: no cases to run")

// ErrReadingOneRun is returned for a repeated or sharded run with a
// Reading: a native value's ambiguity is judged across one whole run's
// cases (rig/readings.go), and a repeated run's case runs go to its spool
// as they end, a shard sees only its own cases; judged there, the same tool
// would get other verdicts.
var ErrReadingOneRun = errors.New("rig: a reading judges one whole run: not a repeated run (--repeat, --for, --link, --answer-delay) or a shard")

// ErrInterrupted is returned, with the report of what was judged (marked
// Interrupted), when the run's context ended before every case ran.
var ErrInterrupted = errors.New("rig: interrupted")

// Run runs the cases. It returns an error only when the rig itself could not
// run (the server did not start, the preflight failed); verdicts are in the
// report. With Options.Out, the report is also the run directory's
// report.json, written once every event is in the log, with the log's head.
// Without it, the run keeps its event log in a temporary directory removed
// at the end: assertion 4 is judged on a real log either way.
//
// A repeated run with Out keeps only the aggregates in memory (Summary,
// Rates) and its case runs in the run directory: the report it returns has
// no Cases (CasesOnDisk), and ReadReport of the directory has them all.
func Run(ctx context.Context, o Options) (*report.Report, error) {
	if o.Out == nil {
		return runWithoutDir(ctx, o)
	}
	rep, sink, err := run(ctx, o)
	if sink != nil {
		defer sink.close()
	}
	if o.Out != nil && rep != nil {
		rep.LogHead = o.Out.Head()
		jerr := writeReportFile(o.Out, rep, sink)
		if jerr != nil {
			err = errors.Join(err, fmt.Errorf("rig: %s: %w", report.ReportFile, jerr))
		}
	}
	return rep, err
}

// writeReportFile writes report.json, its cases from the sink.
func writeReportFile(d *RunDir, rep *report.Report, sink *caseSink) error {
	f, err := os.Create(filepath.Join(d.Path, report.ReportFile))
	if err != nil {
		return err
	}
	err = writeJSON(f, rep, sink)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runWithoutDir runs with a run directory of its own that nobody asked
// for, and removes it; the report names none of its files.
func runWithoutDir(ctx context.Context, o Options) (*report.Report, error) {
	path, err := os.MkdirTemp("", "sshrig-run-*")
	if err != nil {
		return nil, fmt.Errorf("rig: a temporary run directory for the event log: %w", err)
	}
	defer os.RemoveAll(path)
	if o.Out, err = CreateRunDir(path); err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	o.Out.temporary = true // its case runs stay in memory: nobody reads the directory
	rep, sink, err := run(ctx, o)
	if sink != nil {
		sink.close()
	}
	if cerr := o.Out.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("rig: event log: %w", cerr))
	}
	if rep != nil {
		rep.LogHead = ""
		for i := range rep.Cases {
			rep.Cases[i].Transcript = ""
		}
		if rep.Preflight.Case != nil {
			rep.Preflight.Case.Transcript = ""
		}
	}
	return rep, err
}

func run(ctx context.Context, o Options) (*report.Report, *caseSink, error) {
	explicitParallel := o.Parallel
	o.defaults()
	if len(o.Cases) == 0 && len(o.StepCases.Required) == 0 {
		return nil, nil, ErrNoCases
	}
	if o.Tool == nil {
		return nil, nil, errors.New("rig: no tool")
	}
	if o.Reading != nil && (o.Repeat.On() || o.Shard != nil) {
		return nil, nil, ErrReadingOneRun
	}
	cases := make([]matrix.Case, len(o.Cases))
	var invalid []error
	for i, c := range o.Cases {
		cases[i] = c.WithDefaults()
		if err := cases[i].Validate(); err != nil {
			invalid = append(invalid, err)
		}
	}
	if len(invalid) > 0 {
		return nil, nil, fmt.Errorf("rig: invalid cases: %w", errors.Join(invalid...))
	}
	if err := CheckHops(cases, o.Jump); err != nil {
		return nil, nil, err
	}
	if err := CheckFleet(cases, o.Hosts, o.Jump); err != nil {
		return nil, nil, err
	}
	if err := CheckFleetTool(o.Tool, o.Hosts); err != nil {
		return nil, nil, err
	}
	o.Cases = cases
	started := time.Now()
	sess, err := openSession(ctx, o.Target, o.Net, o.Out)
	if err != nil {
		return nil, nil, err
	}
	defer sess.Close()
	env := sess.env
	r := &runner{o: o, env: env, secrets: sess.secrets}
	if o.confirmWithinRun {
		r.ownGate = new(sync.RWMutex)
	}

	rep := &report.Report{
		Version:    report.ReportVersion,
		Tool:       o.Tool.Name(),
		Target:     o.Target.Name(),
		Where:      env.Endpoint().Where,
		Net:        string(env.Net()),
		Jump:       o.Jump,
		Hosts:      o.Hosts,
		Started:    started.UTC(),
		Budget:     o.Budget.String(),
		Shard:      o.Shard,
		WroteJUnit: o.JUnit,
	}

	if s, ok := o.Tool.(tool.Settled); ok {
		rep.ToolSettings = s.Settings()
	}
	if n, ok := o.Tool.(tool.Networker); ok {
		if err := n.UseNetwork(env.ToolNetwork()); err != nil {
			return nil, nil, fmt.Errorf("rig: %w", err)
		}
	}
	if err := toolPreflight(ctx, o.Tool); err != nil {
		rep.Preflight = report.Preflight{Error: err.Error()}
		return rep, nil, &report.PreflightError{Reason: err.Error()}
	}
	pre, spent := r.preflight(ctx)
	if pre.Error != "" {
		rep.Preflight = pre
		return rep, nil, &report.PreflightError{Reason: pre.Error, Case: pre.Case}
	}
	if err := r.addStepCases(&pre); err != nil {
		rep.Preflight = pre
		return rep, nil, err
	}
	rep.Preflight = pre
	par := chooseParallel(explicitParallel, o.Budget, spent)
	r.o.Parallel, rep.Parallel = par.Chosen, &par
	if o.Progress != nil {
		writeConversation(o.Progress, pre)
		fmt.Fprintln(o.Progress, par.Line())
	}

	sink, err := r.runCases(ctx, rep, started)
	if err != nil {
		return nil, nil, err
	}
	if rep.Interrupted {
		return rep, sink, fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
	}
	return rep, sink, nil
}

// runCases runs the matrix and puts its case runs, summary and rates into
// rep; the sink holds the case runs (in memory, or spooled for a long run).
func (r *runner) runCases(ctx context.Context, rep *report.Report, started time.Time) (*caseSink, error) {
	sink, err := newCaseSink(r.o) // rig/spool.go
	if err != nil {
		return nil, err
	}
	sched := r.runAll(ctx, started, sink)
	// An interrupted run reports what it judged, marked interrupted: the
	// case runs it finished and those the interruption cut short
	// (inconclusive); the cases it never started are not in it.
	rep.Interrupted = ctx.Err() != nil
	if err := sink.finish(); err != nil {
		sink.close()
		return nil, err
	}
	rep.Cases, rep.CasesOnDisk = sink.mem, sink.spool != nil
	rep.Summary = sink.agg.Summary()
	rep.Summary.DurationMS = time.Since(started).Milliseconds()
	if r.o.Reading != nil && !rep.CasesOnDisk {
		r.markAmbiguous(rep, started) // rig/readings.go
	}
	aggregate(rep, r.o, sched, sink.agg.Rates()) // rig/aggregate.go: rates of a repeated run
	return sink, nil
}

// runAll runs the cases, in the order and with the parallelism the schedule
// gives (matrix order, Options.Parallel at a time, unless repeated), and says
// each on Progress as it finishes. It stops handing out cases when ctx ends.
func (r *runner) runAll(ctx context.Context, started time.Time, sink *caseSink) *schedule {
	idWidth := 0 // progress lines align on the longest id
	for _, c := range r.o.Cases {
		idWidth = max(idWidth, len(c.ID))
	}
	sched := newSchedule(r.o, started) // rig/repeat.go: which case runs, in which order
	type job struct {
		i int
		c matrix.Case
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var done int
	var mu sync.Mutex
	finished := func(i int, cr report.CaseReport) { // with mu held
		sink.put(i, cr)
		done++
		switch {
		case r.o.Repeat.On():
			sched.progress(r.o.Progress, done, cr, time.Now())
		case r.o.Progress != nil:
			fmt.Fprintf(r.o.Progress, "[%d/%d] %-*s %s%s\n", done, len(r.o.Cases), idWidth, cr.ID, cr.Verdict, confirmedNote(cr))
		}
	}
	var confirm []toConfirm // rig/confirm.go: timing verdicts seen while the machine was busy
	for w := 0; w < sched.parallel; w++ {
		wg.Go(func() {
			for j := range jobs {
				res, busy := r.runBeside(ctx, j.c)
				cr := res.CaseReport
				if r.o.Out != nil {
					r.o.Out.ended(cr.CorrelationID)
				}
				mu.Lock()
				if needsConfirming(ctx, res, busy, r.budget(j.c)) {
					confirm = append(confirm, toConfirm{j.i, j.c, cr, busy})
				} else {
					finished(j.i, cr)
				}
				mu.Unlock()
			}
		})
	}
	for i := 0; ctx.Err() == nil; i++ {
		c, ok := sched.next(time.Now())
		if !ok {
			break
		}
		jobs <- job{i, c}
	}
	close(jobs)
	wg.Wait()
	if len(confirm) > 0 && r.o.Progress != nil && !r.o.Repeat.On() {
		fmt.Fprintf(r.o.Progress, "sshrig: %d case(s) failed on timing while the machine was busy; running each again alone\n", len(confirm))
	}
	r.confirmAlone(ctx, confirm, func(i int, cr report.CaseReport) {
		mu.Lock()
		finished(i, cr)
		mu.Unlock()
	})
	return sched
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
	secrets []secret.Secret
	// workloadRequest is what the preflight learned (Preflight.WorkloadRequest).
	workloadRequest int
	// conversation is the preflight's (Preflight.Conversation): every case's
	// is compared with it.
	conversation []fault.Request
	// ownGate, for a run that confirms within itself
	// (Options.confirmWithinRun), is the gate its confirmations hold alone.
	ownGate *sync.RWMutex
}

// addStepCases adds the step cases the options select to the run's cases,
// made from the preflight's conversation, and says how many there were.
func (r *runner) addStepCases(pre *report.Preflight) error {
	if len(r.o.StepCases.Globs) == 0 || r.o.Shard != nil {
		return nil
	}
	if r.o.Jump {
		return fmt.Errorf("%w: step cases are not made behind a jump host: leave --cases 'step.*' out of a run with --jump", ErrHopsMismatch)
	}
	if r.o.Hosts > 1 {
		return fmt.Errorf("%w: step cases are not made on a fleet: leave --cases 'step.*' out of a run with --hosts", ErrFleetMismatch)
	}
	all, capped := matrix.StepCases(pre.Conversation)
	pre.StepCases, pre.StepsCapped = len(all), capped
	picked, err := matrix.SelectSteps(all, r.o.StepCases)
	if err != nil {
		return err
	}
	r.o.Cases = append(r.o.Cases, picked...)
	if len(r.o.Cases) == 0 {
		return ErrNoCases
	}
	return nil
}

// toolRun is what one invocation of the tool produced.
type toolRun struct {
	stdout, stderr []byte
	stdoutBytes    int64 // all the tool printed on stdout
	duration       time.Duration
	hung           bool
	// machineWait bounds how long the machine made the case wait while the
	// tool ran (machinewait.go); waitGivenBack says a hang was judged with
	// all of it given back, so it would have been one alone too.
	machineWait   time.Duration
	waitGivenBack bool
	exit          *tool.ProcessExit // for tools that run as programs
	answer        *tool.Answer      // for tools that speak a protocol of their own
}

// invoke runs the tool against the case and gives up on it after the budget
// plus grace, plus the time the machine made it wait (awaitTool). A hung
// in-process tool is released when the case ends and its connections
// close; invoke's caller waits for that.
// noHelperSkip is why a kill-helper case is skipped for a tool that holds
// its SSH socket itself (engine.CutRecord.NoHelper).
const noHelperSkip = "kill-helper needs a helper process that owns the tool's SSH socket (such as the ssh child of a wrapper); this tool holds its socket itself"

// invokedRun is what the tool's invocation tells the case's engine run (or
// a fleet's runs): the tool's pid, and that it returned.
type invokedRun interface {
	ToolReturned()
	SetToolPID(pid int)
}

// waitTool waits, once the case's connections are closed, for a hung
// in-process tool to return, which it has or is about to.
func waitTool(run *caseRun, toolDone <-chan struct{}) {
	select {
	case <-toolDone:
	case <-time.After(10 * time.Second):
		run.note = "the tool did not stop within 10s of its case ending"
	}
}

func (r *runner) invoke(ctx context.Context, run invokedRun, t tool.Target) (toolRun, <-chan struct{}) {
	defer run.ToolReturned() // a stalled answer is released once the tool gave up
	tctx, cancel := context.WithCancel(ctx)
	stdout, stderr := capbuf.New(maxStdout), capbuf.New(maxStderr)
	done := make(chan struct{})
	start, waited := time.Now(), r.startWaitClock()
	var tr toolRun
	go func() {
		defer close(done)
		if p, ok := r.o.Tool.(tool.Process); ok {
			exit := p.RunProcess(tctx, t, stdout, stderr, run.SetToolPID)
			tr.exit = &exit
			return
		}
		if a, ok := r.o.Tool.(tool.Answerer); ok {
			answer := a.RunAnswer(tctx, t, stdout, stderr)
			tr.answer = &answer
			return
		}
		r.o.Tool.Run(tctx, t, stdout, stderr)
	}()
	tr.hung, tr.waitGivenBack, tr.machineWait = awaitTool(ctx, done, waited, t.Deadline+r.o.Grace, r.o.Grace)
	keep := func() {
		tr.stdout, tr.stderr = stdout.Bytes(), stderr.Bytes()
		tr.stdoutBytes = stdout.Total()
	}
	if tr.hung || ctx.Err() != nil {
		_, process := r.o.Tool.(tool.Process)
		_, answerer := r.o.Tool.(tool.Answerer)
		if !process && !answerer {
			// An in-process tool writes straight into the buffers: what
			// it printed in time is there now, and what it prints once
			// cancelled answers the rig giving up, not the case. Kept
			// later, it would be a race between the two.
			keep()
		}
		cancel()
		if process || answerer {
			// Its process group is being killed (or it returns once ctx
			// ends); the exit is on its way, and what it wrote in time
			// may still be in its pipes.
			<-done
			keep()
		}
	} else {
		keep()
	}
	tr.duration = time.Since(start)
	cancel()
	return tr, done
}

func (r *runner) target(run *engine.Run, c matrix.Case) (tool.Target, error) {
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
		Network:       run.Network(),
	}
	if j := run.JumpAddr(); j != "" {
		t.Jump = r.env.User() + "@" + j
	}
	if c.Draw != nil {
		t.Seed = c.Draw.Seed
	}
	if c.Scenario == matrix.ScenarioRecordNote {
		t.Lookup = operations.Lookup(run.Spec().ID)
		t.FollowUp = operations.FollowUpTemplate
	}
	t.Approval = c.Approval
	if c.ReconcileProbe != "" {
		ready := r.env.Ready()
		t.Reconcile = reconcile.RemoteCommand(c.ReconcileProbe, ready.Shell, run.Spec().ID, c.Operation, ready.Ledger)
	}
	return t, nil
}

func (r *runner) budget(c matrix.Case) time.Duration {
	if c.Budget > 0 {
		return c.Budget
	}
	return r.o.Budget
}

// runCase runs one case to its verdict. Infrastructure trouble in one case
// makes that case inconclusive; it does not stop the run. The verdict is
// decided once (decide), then logged and reported alike.
func (r *runner) runCase(ctx context.Context, c matrix.Case) caseResult {
	run := &caseRun{c: c, id: r.env.NewID(), start: time.Now()}
	release := r.execute(ctx, run)
	defer release() // after the transcript: the case logs nothing more of its own
	if ctx.Err() != nil && run.skip == "" {
		run.broken = "the run was interrupted while the case ran"
	}
	cr := r.caseReport(run)
	r.logVerdict(cr.CaseReport)
	if run.judged() && r.o.Out != nil && !r.o.Out.temporary { // nobody reads a temporary directory's transcripts
		cr.Transcript = r.o.Out.writeTranscript(run, cr)
	}
	return cr
}

// execute runs the case and gathers its facts into run. release drops the
// case's own key from the log's redaction, once the case logged all it will.
func (r *runner) execute(ctx context.Context, run *caseRun) (release func()) {
	c, id := run.c, run.id
	release = func() {}
	if r.o.Out != nil {
		r.o.Out.Bind(id, c.ID)
	}
	if ok, why := matrix.Applies(c, r.o.Tool); !ok {
		run.skip = why
		return release
	}
	if r.o.Hosts > 1 {
		return r.executeFleet(ctx, run) // rig/fleet.go
	}
	broken := func(why string) func() {
		run.broken = why + r.serverGone(ctx)
		return release
	}
	er, err := r.env.Begin(ctx, r.caseSpec(c, id))
	if err != nil {
		return broken("could not set the case up: " + err.Error())
	}
	if run.t, err = r.target(er, c); err != nil {
		er.Finish(ctx, 0)
		return broken("could not wrap the workload: " + err.Error())
	}
	r.logRequest(c, run.t)
	tr, toolDone := r.invoke(ctx, er, run.t)
	run.tr = tr
	r.logReturned(id, tr)
	if tr.exit != nil && tr.exit.StartErr != "" {
		er.Finish(ctx, 0)
		return broken("could not start the tool: " + tr.exit.StartErr)
	}
	ev, err := er.Finish(ctx, r.o.Settle)
	waitTool(run, toolDone)
	if err != nil && ev == nil {
		return broken("could not finish the case: " + err.Error())
	}
	run.ev = ev
	if ev.Cut != nil && ev.Cut.NoHelper {
		run.skip = noHelperSkip
		return release
	}
	run.secrets, release = r.caseSecrets(run.t)
	read, native := r.readResult(run) // rig/readings.go
	run.native = native
	r.logEvidence(c, id, ev, read)
	run.evs = evidence.Of(ev.Events, id)
	run.in = r.verdictInput(c, run.t, tr, ev, run.evs, run.secrets)
	run.in.Read = &read
	run.in.NoEcho = r.o.Reading != nil
	run.conversationDiff = r.conversationDiffers(c, run.evs)
	return release
}

// caseReport is the case run's record in the report: its verdict as decide
// decided it, and what the run measured.
func (r *runner) caseReport(run *caseRun) caseResult {
	c := run.c
	cr := caseResult{CaseReport: report.CaseReport{ID: c.ID, Alias: c.Alias, Moment: c.Moment, Cut: c.CutName(), Disposition: c.Disposition.String(),
		Tool: r.o.Tool.Name(), CorrelationID: run.id, Operation: c.Operation, Draw: c.Draw, Step: c.Step}}
	cr.take(decide(run))
	if run.skip != "" && run.ev == nil { // it never ran
		return cr
	}
	cr.DurationMS = time.Since(run.start).Milliseconds()
	if !run.judged() {
		return cr
	}
	cr.Truth = truthReport(run.ev.Truth, run.ev.ProbeErr == "")
	cr.diag = diagnose(run.evs, run.tr.stderr, run.secrets)
	cr.workloadRequest, cr.conversation = run.evs.WorkloadRequest(), run.evs.Conversation()
	cr.Upload = run.in.Upload
	cr.Agent = agentReport(run) // rig/agent.go
	cr.Native, cr.NotApplicable = run.native, r.notApplicable()
	cr.cutMissed = cr.Verdict == report.Inconclusive && run.ev.MissedOnTiming
	if len(run.hosts) > 0 { // a fleet: any host's cut may be the one that missed
		cr.cutMissed = cr.Verdict == report.Inconclusive && run.hosts.missedOnTiming()
	}
	cr.hangStandsAlone = run.tr.waitGivenBack
	cr.ToolMS = run.tr.duration.Milliseconds()
	if run.ev.Cut != nil {
		cr.CutLatencyUS = run.ev.Cut.Latency.Microseconds()
	}
	return cr
}

// logVerdict writes the verdict event: exactly the verdict, grade, reason
// and violations the report carries for the case run.
func (r *runner) logVerdict(cr report.CaseReport) { r.logVerdictAs(cr.CorrelationID, cr, nil) }

// logVerdictAs logs cr's decision as the verdict of the case run with
// correlation id, with more said about it (a confirmation alone).
func (r *runner) logVerdictAs(id string, cr report.CaseReport, more map[string]any) {
	data := map[string]any{"verdict": string(cr.Verdict), "violations": cr.Violations}
	if cr.Grade != "" {
		data["grade"] = string(cr.Grade)
	}
	if cr.Reason != "" {
		data["reason"] = cr.Reason
	}
	if len(cr.Hosts) > 0 {
		data["hosts"] = cr.Hosts // a fleet's: each host's verdict, as the report has it
	}
	for k, v := range more {
		data[k] = v
	}
	r.log(eventlog.SourceRig, "verdict", id, data)
}

// conversationDiffers compares the case's conversation with the
// preflight's, for a tool with more to its conversation than one exec
// (evidence.MultiStep) and the cases whose exchange it runs as in the
// preflight (up to their cut): not a step sequence (its own commands), not
// a credential case (the rig's own set-up connection comes first), not
// refuse (nothing is accepted) and not a changed host key (an honest tool
// asks nothing).
func (r *runner) conversationDiffers(c matrix.Case, evs evidence.Case) string {
	if !evidence.MultiStep(r.conversation) || c.Scenario != "" || c.Credential != 0 || c.Moment == fault.Refuse || c.ChangedHostKey {
		return ""
	}
	return evidence.ConversationDiffers(r.conversation, evs)
}

// logRequest records the request the rig built for the tool and its dispatch.
func (r *runner) logRequest(c matrix.Case, t tool.Target) {
	built := map[string]any{"operation": c.Operation, "moment": c.Moment.String(), "cut": c.CutName(),
		"disposition": c.Disposition.String(), "command_sha256": evidence.Digest(t.Command), "deadline_ms": t.Deadline.Milliseconds()}
	if r.o.Out != nil && r.o.Out.LogCommands {
		built["command"] = t.Command
	}
	r.log(eventlog.SourceRig, "request_built", t.CorrelationID, built)
	r.log(eventlog.SourceRig, "dispatch_started", t.CorrelationID, map[string]any{"tool": r.o.Tool.Name()})
}

// logReturned records how the tool's invocation ended.
func (r *runner) logReturned(id string, tr toolRun) {
	returned := map[string]any{"duration_ms": tr.duration.Milliseconds(), "hung": tr.hung, "stdout_bytes": tr.stdoutBytes,
		"machine_wait_ms": tr.machineWait.Milliseconds()}
	if tr.hung {
		returned["wait_given_back"] = tr.waitGivenBack
	}
	if tr.exit != nil {
		returned["exit_code"], returned["pid"] = tr.exit.ExitCode, tr.exit.PID
		if tr.exit.Signal != "" {
			returned["signal"] = tr.exit.Signal
		}
	}
	r.log(eventlog.SourceTool, "tool_returned", id, returned)
	r.logAgent(id, tr.answer) // rig/agent.go
}

// caseSecrets is what must not leak in this case: the run's secrets and, for
// a case with a key of its own, that key's.
// The log redacts that key until release.
func (r *runner) caseSecrets(t tool.Target) (secrets []secret.Secret, release func()) {
	secrets, release = r.secrets, func() {}
	if t.Identity != r.env.Identity() {
		if own, err := secret.OfKeyFile(t.Identity); err == nil {
			secrets = append(append([]secret.Secret(nil), secrets...), own...)
			if r.o.Out != nil {
				release = r.o.Out.addSecrets(own)
			}
		}
	}
	return secrets, release
}

// logEvidence records the cut, the probe's truth and what the tool printed.
func (r *runner) logEvidence(c matrix.Case, id string, ev *engine.Evidence, read verdict.Reading) {
	if ev.Cut != nil {
		// net says who made the cut: the proxy, or the kernel (docs/network.md).
		r.log(eventlog.SourceRig, "cut", id, map[string]any{"moment": ev.Cut.Moment.String(), "cut": c.CutName(), "conn": ev.Cut.Conn,
			"latency_us": ev.Cut.Latency.Microseconds(), "landed": ev.Landed, "not_landed": ev.NotLanded, "net": string(r.env.Net())})
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
	if read.Err != nil {
		observed["parse_error"] = read.Err.Error()
	} else {
		rr := read.Result
		observed["ok"], observed["category"], observed["retry"], observed["correlation_id"] = rr.OK, string(rr.Category), string(rr.Retry), rr.CorrelationID
	}
	r.log(eventlog.SourceRig, "result", id, observed)
}

// verdictInput gathers the evidence the verdict judges: what the tool
// printed and how it ended, and what the server's events say.
func (r *runner) verdictInput(c matrix.Case, t tool.Target, tr toolRun, ev *engine.Evidence, evs evidence.Case, secrets []secret.Secret) verdict.Input {
	id := t.CorrelationID
	in := ev.VerdictInput(evs, id, c.Moment, c.Cut) // what the evidence says, as for any client
	in.Expect = expectation(c)
	if e := agentExpectation(tr.answer); e != nil && in.Expect == nil {
		in.Expect = e
	}
	in.Operation, in.ExitCode = c.Operation, c.ExitCode
	in.Stdout, in.StdoutBytes, in.Stderr = tr.stdout, tr.stdoutBytes, tr.stderr
	in.Duration, in.Budget, in.Hung = tr.duration, t.Deadline, tr.hung
	in.Secrets = secrets
	if c.Fixture != "" {
		in.FollowUps = evs.FollowUps(t.Reconcile)
		in.Delivered = evs.Delivered()
	}
	if t.Reconcile != "" && c.Scenario == "" {
		in.ProbedBetween = evs.ProbedBetween(evidence.Digest(t.Reconcile))
		if in.ProbedBetween {
			in.RetryDelivered = evs.LastDelivered()
		}
	}
	if c.Scenario != "" {
		in.Steps, in.ProbedBetween = evs.Steps(t.Lookup, noteCommand(id), t.Reconcile)
		// A cut in a later call (a lookup, a note) left the create whole.
		in.FirstUnknown = ev.Landed && in.Knowledge == fault.RequestSent && !c.CutsCall()
	}
	if r.o.Out != nil {
		in.Log = &verdict.LogRecord{CorrelationID: r.o.Out.Logged(id, "request_built"), Result: r.o.Out.Logged(id, "result")}
	}
	if c.ChangedHostKey {
		in.HostKeyIgnored = evs.PastKeyExchange()
	}
	if c.Credential != 0 {
		if why := evs.CredentialTested(); why != "" {
			in.Landed, in.NotLanded = false, why
		}
	}
	if tr.exit != nil {
		in.LeftRunning = tr.exit.LeftRunning
	}
	return in
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

// preflight proves the chain is invocable before any case runs, and
// measures what a case of this tool costs (rig/sizing.go). A preflight that
// failed on timing while the machine was busy (other runs of this process
// in flight, or more runnable work than cores) is run again alone, as a
// case is (rig/confirm.go): a starved tool that gave up is no proof that
// the chain is broken. The alone run's word is the preflight's, and its
// cost the one measured.
func (r *runner) preflight(ctx context.Context) (report.Preflight, cost) {
	c := matrix.Case{ID: "preflight", Moment: fault.None, Disposition: fault.Survive, Operation: matrix.DefaultOperation}
	if r.o.Jump {
		c.Hop = fault.JumpTarget // through the jump host; nothing is cut
	}
	probe := startCostProbe()
	cr, busy := r.runBeside(ctx, c)
	spent := probe.finish()
	why := preflightError(cr)
	if why != "" && needsConfirming(ctx, cr, busy, r.budget(c)) {
		if r.o.Progress != nil {
			fmt.Fprintf(r.o.Progress, "sshrig: the preflight failed on timing while %s; running it again alone\n", busy)
		}
		cr = r.confirmOne(ctx, c, cr.CaseReport, busy, func(run func()) {
			probe := startCostProbe()
			run()
			spent = probe.finish()
		})
		why = preflightError(cr)
	}
	p := report.Preflight{Case: &cr.CaseReport, Error: why}
	if p.Error != "" {
		p.Error = invocableReason(r.o.Tool, p.Error, cr.answered) + cr.diag.String()
	}
	p.WorkloadRequest = cr.workloadRequest
	r.workloadRequest = cr.workloadRequest
	p.Conversation = cr.conversation
	if p.Error == "" {
		r.conversation = cr.conversation
	}
	return p, spent
}

// preflightError says why the preflight's case run does not prove the
// chain invocable, or "".
func preflightError(cr caseResult) string {
	switch {
	case cr.ParseError != "":
		return "the tool's result does not parse: " + cr.ParseError
	case cr.Reported == nil && cr.Reason != "":
		return cr.Reason
	case cr.Reported == nil:
		return "the tool printed no result"
	case cr.Reported.Category != result.Succeeded:
		return fmt.Sprintf("the tool reported %s/%s on a case with no fault: %s", cr.Reported.Category, cr.Reported.Retry, cr.Reported.Message)
	case cr.Truth == nil || cr.Truth.Starts != 1 || cr.Truth.Completes != 1:
		why := "the ledger does not show exactly one start and one complete for the preflight's id"
		if cr.Truth != nil {
			why += fmt.Sprintf(" (starts %d, completes %d)", cr.Truth.Starts, cr.Truth.Completes)
		}
		return why
	}
	// On a fleet, every host ran the operation once and was reported.
	for _, h := range cr.Hosts {
		if h.Verdict != report.Pass {
			why := h.Reason
			if len(h.Violations) > 0 {
				why = h.Violations[0].Detail
			}
			return fmt.Sprintf("host %s of the fleet: %s: %s", h.Host, h.Verdict, why)
		}
	}
	return ""
}

func truthReport(t reconcile.Truth, established bool) *reconcile.TruthReport {
	if !established {
		return nil
	}
	return t.Report()
}

// ErrHopsMismatch is returned for a run whose cases and jump host do not
// fit: with a jump host every case names its hop, without one none does.
var ErrHopsMismatch = errors.New("rig: cases and jump host do not fit")

// CheckHops checks that cases fit a run with (jump) or without a jump host
// (Options.Jump).
func CheckHops(cases []matrix.Case, jump bool) error {
	for _, c := range cases {
		switch {
		case jump && c.Hop == 0:
			return fmt.Errorf("%w: case %s names no hop, and in a run through a jump host (--jump) every case must (hop: client-jump or jump-target; matrix/jump.yaml)", ErrHopsMismatch, c.ID)
		case !jump && c.Hop != 0:
			return fmt.Errorf("%w: case %s: hop: %s needs a jump host: run with --jump", ErrHopsMismatch, c.ID, c.Hop)
		}
	}
	return nil
}
