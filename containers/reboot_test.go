package containers_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/reconcile"
)

// A reboot on the container target restarts a container of the case's own
// for real: the command it ran dies with it, the host comes back after the
// pause with the case's files, its ledger and its host key, and a new
// connection through the case's cutter reaches the restarted server. The
// run's own container is not the one restarted.
func TestRebootRestartsTheCasesContainer(t *testing.T) {
	containers.NeedDocker(t)
	l := containers.NewLauncher(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := engine.Start(ctx, engine.Options{Launcher: l})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Close(); err != nil {
			t.Error(err)
		}
		noContainersOf(t, l)
	}()
	const pause = 300 * time.Millisecond
	run, err := env.Begin(ctx, engine.Spec{ID: env.NewID(), Moment: fault.Started, Cut: fault.Reboot, RebootPause: pause})
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := run.Wrap("sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	c, err := run.DialTool(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("echo kept > kept && " + cmd); err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.CutDone():
	case <-ctx.Done():
		t.Fatal("the reboot never happened")
	}

	// The host is back: a new connection reaches it with the pinned key,
	// and finds the file the case wrote before the restart.
	back, err := run.DialTool(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("a new connection after the restart: %v", err)
	}
	s2, err := back.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s2.Stdout = &out
	if err := s2.Run("cat kept"); err != nil || strings.TrimSpace(out.String()) != "kept" {
		t.Errorf("after the restart the case's home holds %q (%v), want the file it wrote before", out.String(), err)
	}
	back.Close()

	ev, err := run.Finish(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec := ev.Cut
	if rec == nil || rec.Err != "" || rec.Restart == nil {
		t.Fatalf("the reboot's record: %+v, want a real restart", rec)
	}
	t.Logf("restart: stop %v, down %v, start %v, reattach %v", rec.Restart.Stop, rec.Restart.Down, rec.Restart.Start, rec.Restart.Reattach)
	if rec.Restart.Down < pause {
		t.Errorf("the host was down %v, want at least the pause %v", rec.Restart.Down, pause)
	}
	if !ev.Landed || !ev.Settled {
		t.Errorf("landed %v (%s), settled %v", ev.Landed, ev.NotLanded, ev.Settled)
	}
	// Killed after its start marker: started, never completed; the ledger
	// read in the container agrees with the one read over SSH.
	if ev.Truth.State != reconcile.Started || !ev.Truth.Agree() || ev.OutOfBand == nil {
		t.Errorf("truth %s (%s), out of band %v; want started, both readings agreeing", ev.Truth, ev.Truth.Disagreement, ev.OutOfBand != nil)
	}
	if alive, why := env.Endpoint().Alive(ctx); !alive {
		t.Errorf("the run's own container: %s", why)
	}
}

// A run closed while a reboot case is in flight (interrupted) removes the
// case's own container too.
func TestRebootCaseClosedWithTheRun(t *testing.T) {
	containers.NeedDocker(t)
	l := containers.NewLauncher(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := engine.Start(ctx, engine.Options{Launcher: l})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Begin(ctx, engine.Spec{ID: env.NewID(), Moment: fault.Started, Cut: fault.Reboot}); err != nil {
		env.Close()
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- env.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
	case <-ctx.Done():
		t.Fatal("closing the run with a reboot case in flight never returned")
	}
	noContainersOf(t, l)
}
