package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/kernelnet"
	"github.com/sshrig/sshrig/internal/server"
	"github.com/sshrig/sshrig/reconcile"
)

// serveEnv makes this test binary act as `sshrig serve` when set, so the
// subprocess launcher is tested across a real process boundary.
const serveEnv = "SSHRIG_ENGINE_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		err := server.Serve(context.Background(), server.ServeOptions{
			TokenHex:  os.Getenv(TokenEnv),
			SSHListen: "127.0.0.1:0", ControlListen: "127.0.0.1:0",
			Lifeline: os.Stdin,
		}, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// workload prints enough for any output moment and exits with code.
func workload(code int) string {
	w := "printf 'sshrig workload line one\\n'; printf 'sshrig workload line two\\n'"
	if code != 0 {
		w += fmt.Sprintf("; exit %d", code)
	}
	return w
}

const testLiveness = time.Second

func startEnv(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start env: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("close env: %v", err)
		}
	})
	return env
}

// startKernelEnv is startEnv on the kernel network; it skips where this
// process may not make one (fails under SSHRIG_REQUIRE_NETNS=1, as in CI).
func startKernelEnv(t testing.TB) *Env {
	t.Helper()
	if err := kernelnet.Check(); err != nil {
		if os.Getenv("SSHRIG_REQUIRE_NETNS") == "1" {
			t.Fatalf("SSHRIG_REQUIRE_NETNS=1 but: %v", err)
		}
		t.Skipf("no kernel network here: %v", err)
	}
	return startEnv(t, Options{Net: NetKernel})
}

type matrixCase struct {
	m   fault.Moment
	cut fault.Cut
	d   fault.Disposition
}

func (c matrixCase) String() string {
	switch c.m {
	case fault.None, fault.Refuse:
		return c.m.String() + "." + c.d.String()
	}
	return c.m.String() + "." + c.cut.String() + "." + c.d.String()
}

// engineMatrix is every moment x {reset, close, blackhole} x the
// dispositions that matter there.
func engineMatrix() []matrixCase {
	var out []matrixCase
	for _, m := range fault.Moments() {
		if m.IsStep() {
			continue // step moments need a conversation: sshrigtest and rig test them
		}
		cuts := fault.TransportCuts()
		if m == fault.None || m == fault.Refuse {
			cuts = []fault.Cut{fault.Reset} // no cut happens; the kind is moot
		}
		for _, cut := range cuts {
			for _, d := range fault.Dispositions() {
				if d.MattersAt(m) {
					out = append(out, matrixCase{m, cut, d})
				}
			}
		}
	}
	return out
}

// wantStage is where an honest client stops when the cut lands at m.
func wantStage(m fault.Moment) string {
	switch m {
	case fault.Refuse:
		return stageDial
	case fault.Accept:
		return stageHandshake
	case fault.Handshake:
		return stageHandshake
	case fault.Auth, fault.Channel:
		return stageSession
	}
	return stageDone
}

func runCase(t testing.TB, ctx context.Context, env *Env, mc matrixCase) (clientResult, *Evidence) {
	t.Helper()
	run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: mc.m, Cut: mc.cut, Disposition: mc.d, OutputBytes: 8})
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	cmd, err := run.Wrap(workload(0))
	if err != nil {
		t.Fatal(err)
	}
	res := runClient(ctx, run, cmd, testLiveness)
	ev, err := run.Finish(ctx, 5*time.Second)
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	return res, ev
}

// TestMatrix drives a golang.org/x/crypto/ssh client through the cutter for
// every moment x cut x disposition that matters, and checks the server's
// events, the truth and the client's error class.
func TestMatrix(t *testing.T) {
	env := startEnv(t, Options{})
	for _, mc := range engineMatrix() {
		t.Run(mc.String(), func(t *testing.T) {
			t.Parallel() // cases share the server as in a run; its blackhole cases wait on the client's liveness
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, ev := runCase(t, ctx, env, mc)
			checkEvents(t, mc, ev)
			if want := ExpectTruth(mc.m, mc.cut, mc.d); ev.Truth.State != want || !ev.Truth.Agree() {
				t.Errorf("truth %s (disagreement %q), want %s", ev.Truth, ev.Truth.Disagreement, want)
			}
			if !ev.Settled {
				t.Errorf("case did not settle")
			}
			checkClient(t, mc, res)
		})
	}
}

// checkEvents asserts the server held exactly once, at the requested moment,
// and (for cuts that drop the transport) saw the drop before the release.
func checkEvents(t testing.TB, mc matrixCase, ev *Evidence) {
	t.Helper()
	if !ev.Landed {
		for _, e := range ev.Events {
			t.Logf("event %d %s %v hold=%v conn=%d pid=%d %s", e.Seq, e.Kind, e.Moment, e.Hold, e.Conn, e.PID, e.Detail)
		}
		t.Fatalf("cut did not land: %s", ev.NotLanded)
	}
	var holds []control.Event
	var lostBeforeRelease bool
	held := false
	for _, e := range ev.Events {
		switch {
		case e.Kind == control.MomentReached && e.Hold:
			holds = append(holds, e)
			held = true
		case e.Kind == control.TransportLost && held:
			lostBeforeRelease = true
		case e.Kind == control.Released:
			held = false
		}
	}
	switch mc.m {
	case fault.None, fault.Refuse:
		if len(holds) != 0 {
			t.Fatalf("server held %d times for %s", len(holds), mc.m)
		}
		if mc.m == fault.Refuse {
			for _, e := range ev.Events {
				if e.Kind == control.ConnAccepted {
					t.Fatalf("a connection reached the server at refuse")
				}
			}
		}
		return
	}
	if len(holds) != 1 || holds[0].Moment != mc.m {
		t.Fatalf("holds %v, want exactly one at %s", holds, mc.m)
	}
	if mc.cut.DropsTransport() && lossSeenWhileHeld(mc.m) && !lostBeforeRelease {
		t.Fatalf("server did not see the transport drop while holding at %s", mc.m)
	}
	// Nothing of the exchange went on past the cut on that connection: no
	// later moment before the server noticed the drop. (Where the server
	// does not read while holding, it may still consume bytes the client
	// sent before the cut, such as its version line; nothing needing the
	// client after the cut, like authentication, can happen.)
	if mc.cut.DropsTransport() {
		released, lost := false, false
		for _, e := range ev.Events {
			switch {
			case e.Conn != holds[0].Conn:
			case e.Kind == control.Released && e.Ref == holds[0].Seq:
				released = true
			case e.Kind == control.TransportLost:
				lost = true
			case e.Kind != control.MomentReached || e.Moment <= mc.m || e.Moment >= fault.Finished:
				// Finished and exit-status are the server's own steps.
			case lossSeenWhileHeld(mc.m) && released && !lost,
				!lossSeenWhileHeld(mc.m) && e.Moment >= fault.Auth:
				t.Fatalf("the exchange reached %s after the cut at %s", e.Moment, mc.m)
			}
		}
		if !lost {
			t.Fatalf("the server never saw the transport drop")
		}
	}
	if ev.Cut.Delivered < ev.Cut.Sent {
		t.Fatalf("cut after %d of the %d bytes the server wrote", ev.Cut.Delivered, ev.Cut.Sent)
	}
}

func checkClient(t testing.TB, mc matrixCase, res clientResult) {
	t.Helper()
	want := wantStage(mc.m)
	// At accept the cut can reach the client before its connect() returned.
	if mc.m == fault.Accept && (res.stage == stageDial || res.stage == stageHandshake) {
		return
	}
	if res.stage != want {
		t.Fatalf("client stopped at %s (%v), want %s", res.stage, res.err, want)
	}
	switch mc.m {
	case fault.Refuse:
		if !errors.Is(res.err, syscall.ECONNREFUSED) {
			t.Errorf("dial error %v, want connection refused", res.err)
		}
	case fault.Exec, fault.Started, fault.Output, fault.Finished:
		if !res.exitMissing() {
			t.Errorf("Wait error %v (%T), want *ssh.ExitMissingError", res.err, res.err)
		}
	case fault.ExitStatus, fault.None:
		if mc.d == fault.RemoteKill {
			if res.err == nil || res.exitMissing() {
				t.Errorf("Wait error %v, want the remote kill reported as an exit signal", res.err)
			}
			break
		}
		if res.err != nil {
			t.Errorf("Wait error %v, want the exit status (nil)", res.err)
		}
	}
	if mc.m == fault.Output {
		if len(res.out) < 8 {
			t.Errorf("client got %d bytes of output before the cut, want at least 8", len(res.out))
		}
	}
	if mc.m == fault.None && mc.d != fault.RemoteKill && !strings.Contains(string(res.out), "line two") {
		t.Errorf("baseline output %q", res.out)
	}
}

// TestExpectTruthTable pins the truth table the rig relies on.
func TestExpectTruthTable(t *testing.T) {
	for _, tc := range []struct {
		m    fault.Moment
		cut  fault.Cut
		d    fault.Disposition
		want reconcile.State
	}{
		{fault.Started, fault.Reset, fault.Survive, reconcile.Completed},
		{fault.Started, fault.Reset, fault.Hangup, reconcile.Started},
		{fault.Started, fault.Blackhole, fault.Hangup, reconcile.Completed},
		{fault.Exec, fault.Close, fault.Hangup, reconcile.NotStarted},
		{fault.Exec, fault.Reset, fault.Survive, reconcile.Completed},
		{fault.Exec, fault.Reset, fault.RemoteKill, reconcile.Started},
		{fault.Channel, fault.Reset, fault.Survive, reconcile.NotStarted},
		{fault.Finished, fault.Reset, fault.Hangup, reconcile.Completed},
	} {
		if got := ExpectTruth(tc.m, tc.cut, tc.d); got != tc.want {
			t.Errorf("ExpectTruth(%s, %s, %s) = %s, want %s", tc.m, tc.cut, tc.d, got, tc.want)
		}
	}
}
