package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/engine"
)

// The workload, the same for every run: a marker-wrapped command that
// prints two lines. The output moment is after its first line.
const (
	workload    = "printf 'sshrig bench: line one\\n'; printf 'sshrig bench: line two\\n'"
	outputBytes = int64(len("sshrig bench: line one\n"))
)

// Injector names who cuts.
type Injector string

const (
	// Barrier: the rig's server holds at the moment and the engine resets
	// the connection in its cutter, then releases the hold.
	Barrier Injector = "barrier"
	// ResetPeer: Toxiproxy's reset_peer toxic (timeout 0), downstream.
	ResetPeer Injector = "reset_peer"
	// Timeout: Toxiproxy's timeout toxic, downstream: data stops, and
	// the connection closes blackholeFor later.
	Timeout Injector = "timeout"
)

// injectors in the order each moment's runs interleave them.
var injectors = []Injector{Barrier, ResetPeer, Timeout}

// blackholeFor is the timeout toxic's own timeout: how long it drops data
// before it closes the connection. It ends the tool, which a blackhole
// would otherwise leave waiting; it is longer than what remains of the
// workload at any moment, so the close never changes a window.
const blackholeFor = 50 * time.Millisecond

// toolDeadline bounds a tool's whole run (a tool cut before it even
// authenticated waits this long at most).
const toolDeadline = 10 * time.Second

// bench holds what every run shares: the rig's engine (one server) and an
// in-process Toxiproxy.
type bench struct {
	env   *engine.Env
	toxi  *toxiAPI
	trace *json.Encoder // every run's result, when set
	phase string        // what the runs are for, in the trace
}

// injection is when the benchmark asked Toxiproxy for a toxic and when
// Toxiproxy answered that it was installed on every link of the proxy.
type injection struct {
	Requested time.Time
	Answered  time.Time
	Err       error
}

// RunResult is one run of one injector at one moment.
type RunResult struct {
	Moment   fault.Moment  `json:"moment"`
	Injector Injector      `json:"injector"`
	Delay    time.Duration `json:"delay_ns,omitempty"` // tool start to toxic request
	Reached  bool          `json:"reached"`            // the server reached the moment
	Window   Window        `json:"window"`
	Effect   Effect        `json:"effect"`
	Verdict  Verdict       `json:"verdict"`
	APIRTT   time.Duration `json:"api_rtt_ns,omitempty"` // the toxic's request to its answer
	// ToxicRequested and ToxicInstalled are when the toxic was asked for and
	// when Toxiproxy answered.
	ToxicRequested time.Time `json:"toxic_requested,omitzero"`
	ToxicInstalled time.Time `json:"toxic_installed,omitzero"`
	// ToolRead is how many bytes the tool read; ToolClosed whether it saw
	// its session close.
	ToolRead   int64 `json:"tool_read"`
	ToolClosed bool  `json:"tool_closed"`
	// Landed and NotLanded are the engine's own judgement (barrier runs).
	Landed    bool   `json:"landed,omitempty"`
	NotLanded string `json:"not_landed,omitempty"`
	// Offsets of the window from the tool's start (calibration).
	StartOffset time.Duration `json:"start_offset_ns"`
	EndOffset   time.Duration `json:"end_offset_ns"`

	t0     time.Time       // the tool's start
	events []control.Event // the case's events, in server order
}

// plan is one run to make: which injector at which moment, and for a
// time-based one the toxic (type, toxicity) and the delay before adding it.
type plan struct {
	moment   fault.Moment
	injector Injector
	toxic    string  // "reset_peer" or "timeout"; "" for the barrier
	toxicity float32 // 1 to cut; 0 for a calibration run (the toxic does nothing)
	delay    time.Duration
}

// run makes one run and judges it on the server's timeline.
func (b *bench) run(ctx context.Context, p plan) (RunResult, error) {
	res := RunResult{Moment: p.moment, Injector: p.injector, Delay: p.delay}
	spec := engine.Spec{ID: b.env.NewID(), Moment: fault.None, Disposition: fault.Survive, OutputBytes: outputBytes}
	if p.injector == Barrier {
		spec.Moment, spec.Cut = p.moment, fault.Reset
		res.Delay = 0
	}
	run, err := b.env.Begin(ctx, spec)
	if err != nil {
		return res, err
	}
	finished := false
	defer func() {
		if !finished {
			run.Finish(context.WithoutCancel(ctx), 0)
		}
	}()
	cmd, err := run.Wrap(workload)
	if err != nil {
		return res, err
	}
	// Every run's tool goes through a Toxiproxy proxy to the case's cutter,
	// so the path is the same whoever cuts.
	px, err := b.toxi.proxy(spec.ID, run.Addr())
	if err != nil {
		return res, err
	}
	defer px.Delete()

	toolCtx, cancel := context.WithTimeout(ctx, toolDeadline)
	defer cancel()
	t0 := time.Now()
	toolDone := make(chan toolResult, 1)
	go func() { toolDone <- runTool(toolCtx, px.Listen, run.ClientConfig(), cmd, toolDeadline) }()
	var inj injection
	if p.toxic != "" {
		inj = inject(toolCtx, px, p.toxic, p.toxicity, t0, p.delay)
	}
	tool := <-toolDone
	if inj.Err != nil {
		return res, fmt.Errorf("%s: add toxic: %w", p.injector, inj.Err)
	}
	ev, err := run.Finish(ctx, 5*time.Second)
	finished = true
	if err != nil {
		return res, err
	}
	if !ev.Settled {
		return res, errors.New("the workload did not settle within 5s")
	}

	res.t0, res.events = t0, ev.Events
	res.Window, res.Reached = windowOf(ev.Events, p.moment)
	if res.Reached {
		res.StartOffset = res.Window.Start.Sub(t0)
		if !res.Window.End.IsZero() {
			res.EndOffset = res.Window.End.Sub(t0)
		}
	}
	if !inj.Answered.IsZero() {
		res.APIRTT = inj.Answered.Sub(inj.Requested)
	}
	res.ToxicRequested, res.ToxicInstalled = inj.Requested, inj.Answered
	res.ToolRead, res.ToolClosed = tool.Read, tool.Closed
	conn := res.Window.Conn
	if conn == 0 {
		conn = 1 // the tool's one connection
	}
	switch {
	case p.injector == Barrier:
		res.Landed, res.NotLanded = ev.Landed, ev.NotLanded
		if ev.Cut != nil {
			conn = ev.Cut.Conn
		}
		if at, ok := lossOf(ev.Events, conn, time.Time{}); ok {
			res.Effect.At = at
		}
	case p.toxicity == 0:
		// Calibration: the toxic did nothing; there is no effect.
	case p.injector == ResetPeer:
		// The reset acts on the next data through the proxy; the server sees
		// it as its transport lost. A tool that saw its session close was
		// never cut: the loss it caused later is its own close.
		if at, ok := lossOf(ev.Events, conn, inj.Requested); ok && !tool.Closed {
			res.Effect.At = at
		}
	case p.injector == Timeout:
		res.Effect = blackholeEffect(ev.Events, conn, inj.Answered, tool.Read, tool.Closed)
	}
	res.Verdict = judge(res.Window, res.Reached, res.Effect)
	if b.trace != nil {
		if err := b.trace.Encode(traceLine{Phase: b.phase, RunResult: res}); err != nil {
			return res, fmt.Errorf("trace: %w", err)
		}
	}
	return res, nil
}

// traceLine is one line of the -trace file.
type traceLine struct {
	Phase string `json:"phase"`
	RunResult
}

// inject waits until delay after t0 (the injector's method: a delay
// calibrated on earlier runs) and adds the toxic to the proxy's downstream
// (server to tool), Toxiproxy's default stream.
func inject(ctx context.Context, px *toxiclient.Proxy, toxic string, toxicity float32, t0 time.Time, delay time.Duration) injection {
	t := time.NewTimer(time.Until(t0.Add(delay)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return injection{Err: ctx.Err()}
	}
	attrs := toxiclient.Attributes{"timeout": 0}
	if toxic == string(Timeout) {
		attrs["timeout"] = blackholeFor.Milliseconds()
	}
	inj := injection{Requested: time.Now()}
	_, inj.Err = px.AddToxic("", toxic, "downstream", toxicity, attrs)
	inj.Answered = time.Now()
	return inj
}
