package engine

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/target"
)

// A reboot on a target that restarts hosts for real (a target.Rebooter:
// the container target). The case gets a host of its own, its server an
// Env of its own (ownHost), since a restart takes down every case on the
// host. At the hold the cutter silences the case's connections as for the
// emulated reboot, then the host restarts for real (Endpoint.Reboot): its
// processes all die, it stays down for the pause, and its server starts
// anew on the files the host kept. The engine reattaches (a new control
// connection and probe), sets the case up again on its surviving host
// (control.Request.Adopt), and sends the cutter's connections where the
// server listens now before it brings them back up.

// restartTimeout bounds a real restart beyond its pause: the kill, the
// start up to the server's ready line, and reattaching.
const restartTimeout = 2 * time.Minute

// RestartRecord is what a real restart of the case's host took.
type RestartRecord struct {
	// Stop is from the kill to the host's processes all gone; Down from
	// then to its start (the pause); Start from the start to its server's
	// ready line; Reattach from then until the case was set up again.
	Stop     time.Duration `json:"stop_ns"`
	Down     time.Duration `json:"down_ns"`
	Start    time.Duration `json:"start_ns"`
	Reattach time.Duration `json:"reattach_ns"`
}

// ownHost starts a server on a host of a case's own, which rb can restart
// for real: an Env of its own that shares the run's keys.
func (e *Env) ownHost(ctx context.Context, rb target.Rebooter) (h *Env, err error) {
	h = &Env{opts: e.opts, parent: e, runTag: e.runTag, runs: map[string]*Run{}, keyDir: e.keyDir,
		identity: e.identity, toolKey: e.toolKey, ca: e.ca, probeID: e.probeID, probeKey: e.probeKey, kernel: e.kernel}
	h.token = make([]byte, 32)
	rand.Read(h.token)
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	if h.ep, err = rb.LaunchRebootable(ctx, h.token); err != nil {
		return nil, err
	}
	if err := h.attach(ctx, h.ep.SSHAddr, h.ep.ControlAddr); err != nil {
		return nil, err
	}
	e.ownMu.Lock()
	e.ownHosts[h] = true
	e.ownMu.Unlock()
	return h, nil
}

// closeOwnHost stops a case's own host once its case is over.
func (e *Env) closeOwnHost() {
	e.Close()
	e.parent.ownMu.Lock()
	delete(e.parent.ownHosts, e)
	e.parent.ownMu.Unlock()
}

// ObserveOwnHosts hands fn every event of the servers on hosts of one
// case's own (a reboot case's container), which the run's control
// connection, and so its taps, never see; nil stops it. fn is called from
// several goroutines at once.
func (e *Env) ObserveOwnHosts(fn func(control.Event)) {
	e.ownMu.Lock()
	e.ownObserver = fn
	e.ownMu.Unlock()
}

// observed hands ev, an event of an own host's server, to the run's
// observer.
func (e *Env) observed(ev control.Event) {
	e.ownMu.Lock()
	fn := e.ownObserver
	e.ownMu.Unlock()
	if fn != nil {
		fn(ev)
	}
}

// restartsForReal says whether a reboot on this Env restarts its host.
func (e *Env) restartsForReal() bool { return e.ep.Reboot != nil }

// do sends req on the control connection of the server's current start. A
// request that meets a restart in flight waits until the server is back,
// and goes to it.
func (e *Env) do(ctx context.Context, req control.Request) error {
	for {
		l, err := e.attached(ctx)
		if err != nil {
			return err
		}
		if err = l.ctl.Do(ctx, req); err == nil || !e.restartedSince(l) {
			return err
		}
	}
}

// attached is the link to the server's current start, once no restart is
// in flight.
func (e *Env) attached(ctx context.Context) (*serverLink, error) {
	e.rebootMu.Lock()
	wait := e.rebooting
	e.rebootMu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.link.Load(), nil
}

// restartedSince says whether the server restarted, or is restarting,
// since l was its link.
func (e *Env) restartedSince(l *serverLink) bool {
	e.rebootMu.Lock()
	inFlight := e.rebooting != nil
	e.rebootMu.Unlock()
	return inFlight || e.link.Load() != l
}

// restart restarts the case's own host for real, down for pause, and
// reattaches to its server: the case set up again on the host's files (its
// moment fired already: nothing of it holds again), the cutter's new
// connections sent where the server listens now. Control requests
// meanwhile wait for it (do).
func (r *Run) restart(ctx context.Context, pause time.Duration) (*RestartRecord, error) {
	e := r.env
	done := make(chan struct{})
	e.rebootMu.Lock()
	e.rebooting = done
	e.rebootMu.Unlock()
	defer func() {
		e.rebootMu.Lock()
		e.rebooting = nil
		e.rebootMu.Unlock()
		close(done)
	}()
	old := e.link.Load()
	rb, err := e.ep.Reboot(ctx, pause)
	rec := &RestartRecord{Stop: rb.Stop, Down: rb.Down, Start: rb.Start}
	// The old start's control connection ends only now: a server that
	// lost its rig before its host went down would have ended its cases
	// itself.
	old.close()
	if err != nil {
		return rec, err
	}
	start := time.Now()
	defer func() { rec.Reattach = time.Since(start) }()
	if err := e.attach(ctx, rb.SSHAddr, rb.ControlAddr); err != nil {
		return rec, fmt.Errorf("reattach: %w", err)
	}
	req := setupRequest(r.spec, false)
	req.Arm.Moment = 0
	req.Adopt = true
	if err := e.link.Load().ctl.Do(ctx, req); err != nil {
		return rec, fmt.Errorf("set the case up again on its host: %w", err)
	}
	return rec, r.cutter.SetUpstream(rb.SSHAddr)
}
