package engine

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/procs"
)

var landingReps = flag.Int("sshrig.reps", 200, "repetitions per (moment, cut) pair in TestLandsEveryTime")

// TestLandsEveryTime repeats every (moment, cut) pair and requires the cut to
// land at its moment every single time. Nothing here sleeps: every wait is on
// an event (the server's hold, the cutter's flush, the server's loss).
func TestLandsEveryTime(t *testing.T) {
	t.Parallel() // beside the kernel network's: each mostly waits on events
	landsEveryTime(t, startEnv(t, Options{}), fault.TransportCuts())
}

// TestLandsEveryTimeKernel is TestLandsEveryTime on the kernel network,
// for the cuts the kernel makes there: the tool dials from its own
// namespace, and the fault is installed in the server side's kernel at the
// same barrier.
func TestLandsEveryTimeKernel(t *testing.T) {
	t.Parallel()
	landsEveryTime(t, startKernelEnv(t), fault.KernelCuts())
}

func landsEveryTime(t *testing.T, env *Env, cuts []fault.Cut) {
	reps := *landingReps
	if testing.Short() {
		reps = 20
	}
	type pair struct {
		m   fault.Moment
		cut fault.Cut
	}
	var pairs []pair
	for _, m := range fault.Moments() {
		if m.IsStep() {
			continue // step moments need a conversation: sshrigtest and rig test them
		}
		switch m {
		case fault.None:
			continue
		case fault.Refuse:
			pairs = append(pairs, pair{m, fault.Reset})
			continue
		}
		for _, cut := range cuts {
			pairs = append(pairs, pair{m, cut})
		}
	}
	for _, p := range pairs {
		name := p.m.String() + "." + p.cut.String()
		if p.m == fault.Refuse {
			name = p.m.String()
		}
		t.Run(name, func(t *testing.T) {
			landsRepeatedly(t, env, reps, Spec{Moment: p.m, Cut: p.cut, Disposition: fault.Survive, OutputBytes: 8})
		})
	}
}

// landsRepeatedly runs spec (a fresh id each time) reps times, four case
// runs at a time on env's one server, each with an in-process client until
// the cut, and fails unless every run landed with the truth ExpectTruth
// gives and the ledger and the server agree.
func landsRepeatedly(t *testing.T, env *Env, reps int, spec Spec) {
	t.Helper()
	const workers = 4 // cases in parallel on the one server
	var landed, wrong int
	var mu sync.Mutex
	var failures []string
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for range jobs {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				s := spec
				s.ID = env.NewID()
				run, err := env.Begin(ctx, s)
				if err != nil {
					cancel()
					mu.Lock()
					failures = append(failures, "begin: "+err.Error())
					mu.Unlock()
					continue
				}
				cmd, _ := run.Wrap(workload(0))
				runClientUntilCut(ctx, run, cmd)
				ev, err := run.Finish(ctx, 5*time.Second)
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, "finish: "+err.Error())
				case !ev.Landed:
					failures = append(failures, ev.NotLanded)
				default:
					landed++
					if want := ExpectTruth(spec.Moment, spec.Cut, spec.Disposition); ev.Truth.State != want || !ev.Truth.Agree() {
						wrong++
						failures = append(failures, fmt.Sprintf("truth %s, want %s %s", ev.Truth, want, ev.Truth.Disagreement))
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := 0; i < reps; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if landed != reps || wrong != 0 {
		if len(failures) > 5 {
			failures = failures[:5]
		}
		t.Fatalf("landed %d of %d, wrong truth %d; first failures: %s", landed, reps, wrong, strings.Join(failures, " | "))
	}
	t.Logf("landed %d of %d", landed, reps)
}

// TestParallelAttribution runs 16 cases at once on one server and checks that
// every event, process and marker is attributed to the right case.
func TestParallelAttribution(t *testing.T) {
	env := startEnv(t, Options{})
	tap := env.Control().Tap()
	defer tap.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	moments := []fault.Moment{fault.None, fault.Exec, fault.Started, fault.Output, fault.Finished, fault.ExitStatus, fault.Channel, fault.Auth}
	const n = 16
	type outcome struct {
		id  string
		res clientResult
		ev  *Evidence
		err error
	}
	outcomes := make([]outcome, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() {
			m := moments[i%len(moments)]
			run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: m, Cut: fault.Reset, Disposition: fault.Survive, OutputBytes: 4})
			if err != nil {
				outcomes[i].err = err
				return
			}
			id := run.Spec().ID
			// Each command prints its own id, so crossed wires would show.
			cmd, _ := run.Wrap("printf '%s\\n' " + id)
			res := runClient(ctx, run, cmd, testLiveness)
			ev, err := run.Finish(ctx, 5*time.Second)
			outcomes[i] = outcome{id: id, res: res, ev: ev, err: err}
		})
	}
	wg.Wait()

	pidCase := map[int]string{}
	for _, o := range outcomes {
		if o.err != nil {
			t.Fatalf("case %s: %v", o.id, o.err)
		}
		if !o.ev.Landed {
			t.Errorf("case %s: %s", o.id, o.ev.NotLanded)
		}
		for _, e := range o.ev.Events {
			if e.Case != o.id {
				t.Errorf("case %s received an event of case %s", o.id, e.Case)
			}
			if e.Kind == control.ExecReceived && e.MarkerID != o.id {
				t.Errorf("case %s: exec carries marker id %q", o.id, e.MarkerID)
			}
			if e.Kind == control.ProcSpawned {
				if other, dup := pidCase[e.PID]; dup {
					t.Errorf("pid %d attributed to %s and %s", e.PID, other, o.id)
				}
				pidCase[e.PID] = o.id
			}
		}
		if o.ev.Spec.Moment == fault.None && strings.TrimSpace(string(o.res.out)) != o.id {
			t.Errorf("case %s: client read %q", o.id, o.res.out)
		}
	}
	// Every marker in the ledger comes from a process of its own case.
	ledger := outcomes[len(outcomes)-1].ev.Ledger
	if len(ledger.Malformed) != 0 {
		t.Errorf("malformed ledger lines: %v", ledger.Malformed)
	}
	for _, e := range ledger.Entries {
		if owner, ok := pidCase[e.PID]; ok && owner != e.ID {
			t.Errorf("ledger line %d: marker %s written by pid %d of case %s", e.Line, e.ID, e.PID, owner)
		}
	}
	// The server-wide tap saw the same attribution.
	drain, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	for {
		e, err := tap.Next(drain)
		if err != nil {
			break
		}
		if e.Kind == control.ProcSpawned && e.Case != "" {
			if owner := pidCase[e.PID]; owner != "" && owner != e.Case {
				t.Errorf("tap: pid %d under %s, case saw it under %s", e.PID, e.Case, owner)
			}
		}
		if e.Kind == control.CaseEnded && e.Case == outcomes[len(outcomes)-1].id {
			break
		}
	}
}

// TestCloseLeavesNothing leaves a surviving command running and a connection
// blackholed, closes everything, and checks no process and no goroutine remain.
func TestCloseLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: fault.Started, Cut: fault.Reset, Disposition: fault.Survive})
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := run.Wrap("sleep 300")
	res := runClient(ctx, run, cmd, testLiveness)
	if !res.exitMissing() {
		t.Fatalf("client: %v", res.err)
	}
	// The output moment comes once "one\n", its 4 bytes, were written; a
	// larger N would never come, and the client would wait out ctx.
	bh, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: fault.Output, Cut: fault.Blackhole, Disposition: fault.Survive, OutputBytes: 4})
	if err != nil {
		t.Fatal(err)
	}
	bcmd, _ := bh.Wrap("echo one; sleep 300")
	runClientUntilCut(ctx, bh, bcmd)
	select {
	case <-bh.CutDone():
	default:
		t.Fatal("the blackhole at output never landed")
	}

	var pids []int
	for _, e := range append(run.Events(), bh.Events()...) {
		if e.Kind == control.ProcSpawned {
			pids = append(pids, e.PID)
		}
	}
	if len(pids) != 2 {
		t.Fatalf("spawned %v, want 2 processes", pids)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("survivor %d not running before Close: %v", pid, err)
		}
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if members := procs.Group(pid); len(members) != 0 {
			t.Errorf("process group %d still has members %v after Close", pid, members)
		}
	}
	if kids := procs.Children(os.Getpid()); len(kids) != 0 {
		t.Errorf("child processes left: %v", kids)
	}
	goleak.VerifyNone(t)
}

// TestSubprocessServer runs cases against `sshrig serve` in a separate
// process (this test binary re-executed as the server).
func TestSubprocessServer(t *testing.T) {
	env := startEnv(t, Options{Launcher: Subprocess{Command: []string{os.Args[0]}, Env: []string{serveEnv + "=1"}}})
	for _, mc := range []matrixCase{
		{fault.None, fault.Reset, fault.Survive},
		{fault.Started, fault.Reset, fault.Hangup},
		{fault.Exec, fault.Close, fault.Survive},
		{fault.ExitStatus, fault.Blackhole, fault.Survive},
	} {
		t.Run(mc.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, ev := runCase(t, ctx, env, mc)
			checkEvents(t, mc, ev)
			checkClient(t, mc, res)
			if want := ExpectTruth(mc.m, mc.cut, mc.d); ev.Truth.State != want {
				t.Errorf("truth %s, want %s", ev.Truth, want)
			}
		})
	}
}

// TestTruthDisagreement: a marker written by a process the server did not run
// for the id makes the sources disagree.
func TestTruthDisagreement(t *testing.T) {
	env := startEnv(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: fault.None, Disposition: fault.Survive})
	if err != nil {
		t.Fatal(err)
	}
	// The command forges a complete marker for its own id from a process
	// the server never saw start.
	forged := fmt.Sprintf("printf '%%s complete 0 1 999999\\n' %s >> %s", run.Spec().ID, env.Ready().Ledger)
	cmd, _ := run.Wrap(forged)
	if res := runClient(ctx, run, cmd, testLiveness); res.err != nil {
		t.Fatal(res.err)
	}
	ev, err := run.Finish(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Truth.Agree() || !strings.Contains(ev.Truth.Disagreement, "999999") {
		t.Fatalf("truth %s agreed (%q); want a disagreement naming pid 999999", ev.Truth, ev.Truth.Disagreement)
	}
}

// BenchmarkCase measures, on loopback, the dial+handshake time through the
// cutter, the event-to-cut latency, and the per-case overhead: the whole case
// (begin, tool, finish with truth) minus the command's own run time.
func BenchmarkCase(b *testing.B) {
	env := startEnv(b, Options{})
	ctx := context.Background()
	var handshakes, latencies, overheads []time.Duration
	for b.Loop() {
		start := time.Now()
		run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: fault.Started, Cut: fault.Reset, Disposition: fault.Survive})
		if err != nil {
			b.Fatal(err)
		}
		cmd, _ := run.Wrap("true")
		dialStart := time.Now()
		client, err := run.DialTool(ctx, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		handshakes = append(handshakes, time.Since(dialStart))
		sess, _ := client.NewSession()
		sess.Run(cmd)
		client.Close()
		ev, err := run.Finish(ctx, 5*time.Second)
		if err != nil || !ev.Landed {
			b.Fatalf("finish: %v %s", err, ev.NotLanded)
		}
		latencies = append(latencies, ev.Cut.Latency)
		// Everything but the command's own run: set-up, the tool's
		// connection, the cut and release, settling, the truth probe and
		// teardown.
		overheads = append(overheads, time.Since(start)-commandTime(ev.Events))
	}
	report(b, "handshake", handshakes)
	report(b, "cut", latencies)
	report(b, "case-overhead", overheads)
}

// commandTime is how long the server saw the command run.
func commandTime(events []control.Event) time.Duration {
	var spawned, exited time.Time
	for _, e := range events {
		switch e.Kind {
		case control.ProcSpawned:
			spawned = e.Time
		case control.ProcExited:
			exited = e.Time
		}
	}
	if spawned.IsZero() || exited.IsZero() {
		return 0
	}
	return exited.Sub(spawned)
}

func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, name+"-p99-ms")
}

// tamperLauncher serves the embedded server but reports a different ledger
// out of band, as a container whose file disagrees with what SSH returned.
type tamperLauncher struct{ InProcess }

func (l tamperLauncher) Launch(ctx context.Context, token []byte) (*Endpoint, error) {
	ep, err := l.InProcess.Launch(ctx, token)
	if err != nil {
		return nil, err
	}
	read := ep.ReadLedger
	ep.ReadLedgerOf = nil // as a container's endpoint: the whole file, filtered by the engine
	ep.ReadLedger = func(ctx context.Context) ([]byte, error) {
		b, err := read(ctx)
		// Drop every complete marker.
		var kept []string
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, " complete ") && line != "" {
				kept = append(kept, line)
			}
		}
		return []byte(strings.Join(kept, "\n") + "\n"), err
	}
	return ep, nil
}

func TestOutOfBandLedgerMustAgree(t *testing.T) {
	for _, tc := range []struct {
		name     string
		launcher Launcher
		agree    bool
	}{
		{"embedded reads its ledger twice", InProcess{}, true},
		{"a reading that differs", tamperLauncher{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := startEnv(t, Options{Launcher: tc.launcher})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, ev := runCase(t, ctx, env, matrixCase{fault.None, fault.Reset, fault.Survive})
			if ev.OutOfBand == nil {
				t.Fatal("no out-of-band reading")
			}
			if ev.Truth.Agree() != tc.agree {
				t.Fatalf("agree=%v (%q), want %v", ev.Truth.Agree(), ev.Truth.Disagreement, tc.agree)
			}
			if !tc.agree && !strings.Contains(ev.Truth.Disagreement, "out of band") {
				t.Fatalf("disagreement %q does not say which readings differ", ev.Truth.Disagreement)
			}
		})
	}
}

// TestToolGoneBeforeCut: when the rig gets to its cut only after the tool
// gave up (a starved rig, a tool with tight keepalives), the cut fails and
// the evidence says the tool was gone first (LeftBeforeCut), not that the
// exchange never reached the moment: the rig confirms such a case alone
// (rig/confirm.go) instead of blaming the tool or itself.
func TestToolGoneBeforeCut(t *testing.T) {
	env := startEnv(t, Options{})
	for _, cut := range []fault.Cut{fault.Reset, fault.KillHelper} {
		t.Run(cut.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: fault.Started, Cut: cut, Disposition: fault.Survive})
			if err != nil {
				t.Fatal(err)
			}
			clientCtx, giveUp := context.WithCancel(ctx)
			defer giveUp()
			testHookBeforeCut = func(r *Run, ev control.Event) {
				giveUp() // the tool gives up while the server holds
				if _, err := r.cutter.WaitEnded(ctx, ev.Conn); err != nil {
					t.Error(err)
				}
			}
			defer func() { testHookBeforeCut = nil }()
			cmd, err := run.Wrap(workload(0))
			if err != nil {
				t.Fatal(err)
			}
			runClientCtx(clientCtx, run, cmd, testLiveness)
			ev, err := run.Finish(ctx, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Landed || !ev.LeftBeforeCut || ev.NeverReached || !ev.MissedOnTiming || ev.Cut == nil || !ev.Cut.ToolLeft {
				t.Fatalf("landed %v, left before cut %v, never reached %v, missed on timing %v, cut %+v", ev.Landed, ev.LeftBeforeCut, ev.NeverReached, ev.MissedOnTiming, ev.Cut)
			}
			t.Logf("not landed: %s", ev.NotLanded)
		})
	}
}

// TestLossUnseenMissesOnTiming: a cut whose effect the server did not see
// within LossTimeout (a starved machine delays the server's reader and the
// rig's dispatcher, not only the tool) did not land, and the evidence says
// the reason rests on the schedule, so the rig confirms the case alone
// instead of calling it inconclusive. A LossTimeout of a nanosecond runs
// out before any server can report a loss.
func TestLossUnseenMissesOnTiming(t *testing.T) {
	env := startEnv(t, Options{LossTimeout: time.Nanosecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, ev := runCase(t, ctx, env, matrixCase{m: fault.Started, cut: fault.Reset, d: fault.Survive})
	if ev.Landed || !ev.MissedOnTiming || ev.NeverReached || ev.LeftBeforeCut || ev.Cut == nil || ev.Cut.ServerSawLoss {
		t.Fatalf("landed %v, missed on timing %v, never reached %v, left before cut %v, cut %+v", ev.Landed, ev.MissedOnTiming, ev.NeverReached, ev.LeftBeforeCut, ev.Cut)
	}
	if !strings.Contains(ev.NotLanded, "did not see its transport drop") {
		t.Fatalf("not landed: %q", ev.NotLanded)
	}
}

var jumpReps = flag.Int("sshrig.jumpreps", 10, "repetitions per (hop, moment, cut) in TestLandsEveryTimeJump")

// TestLandsEveryTimeJump: behind a jump host, every cut lands at the
// target's moment on either hop, and the truth is what the same cut makes
// without one. The server is its own jump host; the test's client reaches
// the target through a direct-tcpip tunnel, as `ssh -J` does.
func TestLandsEveryTimeJump(t *testing.T) {
	t.Parallel()
	env := startEnv(t, Options{})
	reps := *jumpReps
	type pair struct {
		hop fault.Hop
		m   fault.Moment
		cut fault.Cut
	}
	pairs := []pair{{fault.JumpTarget, fault.Refuse, 0}}
	for _, hop := range fault.Hops() {
		for _, m := range fault.Moments() {
			if !m.HasCut() || m.IsStep() {
				continue
			}
			for _, cut := range fault.TransportCuts() {
				pairs = append(pairs, pair{hop, m, cut})
			}
		}
	}
	for _, p := range pairs {
		name := p.hop.String() + "." + p.m.String() + "." + p.cut.String()
		if p.m == fault.Refuse {
			name = p.hop.String() + ".refuse"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for range reps {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: p.m, Cut: p.cut, Disposition: fault.Survive, OutputBytes: 8, Hop: p.hop})
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				cmd, _ := run.Wrap(workload(0))
				res := runClientUntilCut(ctx, run, cmd)
				ev, err := run.Finish(ctx, 5*time.Second)
				cancel()
				switch {
				case err != nil:
					t.Fatal(err)
				case !ev.Landed:
					t.Fatalf("not landed: %s (client stopped at %s: %v)", ev.NotLanded, res.stage, res.err)
				case ev.Truth.State != ExpectTruth(p.m, p.cut, fault.Survive) || !ev.Truth.Agree():
					t.Fatalf("truth %s, want %s %s", ev.Truth.String(), ExpectTruth(p.m, p.cut, fault.Survive), ev.Truth.Disagreement)
				}
				if p.m == fault.Refuse {
					if res.stage != stageDial {
						t.Fatalf("a dead target behind the jump host: the client stopped at %s, want %s", res.stage, stageDial)
					}
					continue
				}
				if c := ev.Cut; p.hop == fault.ClientJump && (c.Hop != fault.ClientJump || c.HeldConn < control.JumpTargetConn || c.Conn >= control.JumpTargetConn) ||
					p.hop == fault.JumpTarget && (c.Hop != 0 || c.Conn < control.JumpTargetConn) {
					t.Fatalf("cut %+v: not on hop %s", *c, p.hop)
				}
			}
		})
	}
}

var serverFaultReps = flag.Int("sshrig.serverreps", 20, "repetitions per (moment, fault, disposition) of the far side's faults in TestServerFaultsLandEveryTime (200 for the acceptance figure)")

// TestServerFaultsLandEveryTime repeats each of the far side's faults at
// every moment it fits, with the dispositions that change its truth there,
// and requires it to land every time with the truth ExpectTruth gives. A
// reboot's pause is short here: how long the host stays down does not move
// where the fault lands.
func TestServerFaultsLandEveryTime(t *testing.T) {
	t.Parallel()
	env := startEnv(t, Options{})
	reps := *serverFaultReps
	if testing.Short() {
		reps = 5
	}
	type triple struct {
		m   fault.Moment
		cut fault.Cut
		d   fault.Disposition
	}
	var all []triple
	for _, cut := range fault.ServerCuts() {
		for _, m := range fault.Moments() {
			if !m.HasCut() || m.IsStep() || !cut.FitsMoment(m) {
				continue
			}
			for _, d := range fault.Dispositions() {
				if d.AppliesAt(m) && (d == fault.Survive || d.MattersAt(m) && cut == fault.ServerCrash) {
					all = append(all, triple{m, cut, d})
				}
			}
		}
	}
	for _, p := range all {
		t.Run(p.cut.String()+"."+p.m.String()+"."+p.d.String(), func(t *testing.T) {
			spec := Spec{Moment: p.m, Cut: p.cut, Disposition: p.d, OutputBytes: 8}
			if p.cut == fault.Reboot {
				spec.RebootPause = 20 * time.Millisecond
			}
			landsRepeatedly(t, env, reps, spec)
		})
	}
}
