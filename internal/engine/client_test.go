package engine

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// Stages at which a test client can fail.
const (
	stageDial      = "dial"
	stageHandshake = "handshake"
	stageSession   = "session"
	stageStart     = "start"
	stageWait      = "wait"
	stageDone      = "done"
)

// testHandshake bounds connect plus handshake. Generous: under the race
// detector with many cases in parallel on two cores, a handshake can take
// hundreds of milliseconds.
const testHandshake = 2 * time.Second

// clientResult is what an honest golang.org/x/crypto/ssh client saw.
type clientResult struct {
	stage string // where it stopped: stageDone when Wait returned
	err   error
	out   []byte
}

func (r clientResult) exitMissing() bool {
	var em *gossh.ExitMissingError
	return errors.As(r.err, &em)
}

// runClient runs cmd through the case's cutter the way a careful tool would:
// a deadline around dial and handshake (ssh.ClientConfig.Timeout bounds only
// the connect), and keepalives with a reply deadline while the session runs,
// so a blackhole ends in bounded time.
func runClient(ctx context.Context, r *Run, cmd string, liveness time.Duration) clientResult {
	return runClientCtx(ctx, r, cmd, liveness)
}

// runClientCtx is runClient that also gives up when ctx ends.
func runClientCtx(ctx context.Context, r *Run, cmd string, liveness time.Duration) clientResult {
	conn, err := r.DialTarget(ctx, &net.Dialer{Timeout: testHandshake})
	if err != nil {
		return clientResult{stage: stageDial, err: err}
	}
	stopClose := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopClose()
	conn.SetDeadline(time.Now().Add(testHandshake))
	c, chans, reqs, err := gossh.NewClientConn(conn, r.Addr(), r.ClientConfig())
	if err != nil {
		conn.Close()
		return clientResult{stage: stageHandshake, err: err}
	}
	conn.SetDeadline(time.Time{})
	client := gossh.NewClient(c, chans, reqs)
	defer client.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		keepalive(client, liveness, stop)
	}()
	defer func() { close(stop); wg.Wait() }()

	sess, err := client.NewSession()
	if err != nil {
		return clientResult{stage: stageSession, err: err}
	}
	defer sess.Close()
	var out bytes.Buffer
	sess.Stdout = &out
	if err := sess.Start(cmd); err != nil {
		return clientResult{stage: stageStart, err: err, out: out.Bytes()}
	}
	err = sess.Wait()
	return clientResult{stage: stageDone, err: err, out: out.Bytes()}
}

// keepalive closes client when a keepalive gets no reply within liveness.
func keepalive(client *gossh.Client, liveness time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(liveness / 4)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		replied := make(chan struct{})
		go func() {
			client.SendRequest("keepalive@openssh.com", true, nil)
			close(replied)
		}()
		t := time.NewTimer(liveness)
		select {
		case <-replied:
			t.Stop()
		case <-t.C:
			client.Close()
			<-replied
			return
		case <-stop:
			t.Stop()
			client.Close()
			<-replied
			return
		}
	}
}

// runClientUntilCut runs the client and, for a cut the tool does not hear
// (a blackhole, a vanish), gives up on it as soon as the cut happened:
// tests that only count landings need not wait for keepalives to notice.
func runClientUntilCut(ctx context.Context, r *Run, cmd string) clientResult {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan clientResult, 1)
	go func() { done <- runClientCtx(ctx, r, cmd, testLiveness) }()
	if r.Spec().Cut.SilentToTool() {
		select {
		case <-r.CutDone():
			cancel()
		case res := <-done:
			return res
		}
	}
	return <-done
}
