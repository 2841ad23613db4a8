package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// The jump host. A case armed with control.Arm.Jump makes the server a
// bastion on the case's connections from the first cutter: it serves
// direct-tcpip (what `ssh -J`, ProxyJump and every library's tunnel ask for)
// to the case's target address only, and relays the tunnel over a TCP
// connection of its own, which the case's second cutter carries back to this
// server, now as the target. The target's connections name their tunnel in
// their preamble (the From the second cutter saw), so the server knows which
// jump-host connection carries each.
//
//	tool ── cutter 1 ── [jump host: conn 1] ═ tunnel ═ relay ── cutter 2 ── [target: conn 1001]
//
// As sshd does, the relay ends the tunnel when either side ends: a target
// connection that drops closes the channel (the tool's inner SSH connection
// sees EOF), and a jump-host connection that drops closes the relay's socket
// (the target sees its transport end, and the case's disposition applies).

// jumpDialTimeout bounds the relay's connection to the target: a target
// that does not answer is reported to the tool as a failed channel open,
// as sshd does after its own connect timeout.
const jumpDialTimeout = 10 * time.Second

// directTCPIP is the payload of a direct-tcpip channel open (RFC 4254 7.2).
type directTCPIP struct {
	DestAddr string
	DestPort uint32
	OrigAddr string
	OrigPort uint32
}

// relay is one tunnel the jump host opened to the case's target.
type relay struct {
	via *tconn // the jump-host connection carrying the tunnel's channel

	mu      sync.Mutex
	relayed int64         // target->tool bytes written into the channel
	ended   bool          // the target->tool direction ended
	changed chan struct{} // closed and replaced at every change
}

func newRelay(via *tconn) *relay { return &relay{via: via, changed: make(chan struct{})} }

func (r *relay) update(f func()) {
	r.mu.Lock()
	f()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// relayedThrough waits until the tunnel has relayed n bytes of the
// target's toward the tool (or ended, or stop closed), and returns how many
// bytes the server had written on the jump-host connection then: a cut of
// that connection after them delivers the target's n bytes to the tool.
func (r *relay) relayedThrough(n int64, caseEnded, closing <-chan struct{}) (viaSent int64, ok bool) {
	for {
		r.mu.Lock()
		done, ended, ch := r.relayed >= n, r.ended, r.changed
		r.mu.Unlock()
		if done || ended {
			return r.via.sent.Load(), done
		}
		select {
		case <-ch:
		case <-caseEnded:
			return r.via.sent.Load(), false
		case <-closing:
			return r.via.sent.Load(), false
		}
	}
}

// viaPort is the key a relay is registered under: the local port of its
// connection to the target, which the second cutter names as the target
// connection's From. The port alone, because the relay binds it before it
// connects (the address then is still the wildcard).
func viaPort(from string) int {
	_, p, err := net.SplitHostPort(from)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// tunnelOf returns the relay a target connection with preamble From came
// through, or nil.
func (c *caseState) tunnelOf(from string) *relay {
	if from == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relays[viaPort(from)]
}

// handleDirectTCPIP serves a direct-tcpip channel: the jump host's tunnel.
func (s *Server) handleDirectTCPIP(_ *gliderssh.Server, _ *gossh.ServerConn, newChan gossh.NewChannel, ctx gliderssh.Context) {
	tc := ctx.Value(connKey{}).(*tconn)
	c := tc.c
	if !c.work.enter() {
		newChan.Reject(gossh.ConnectionFailed, "case ended")
		return
	}
	defer c.work.leave()
	var d directTCPIP
	if err := gossh.Unmarshal(newChan.ExtraData(), &d); err != nil {
		s.emitRequest(c, tc, 0, control.StepDirectTCPIP, false, "malformed: "+err.Error())
		newChan.Reject(gossh.ConnectionFailed, "malformed direct-tcpip request")
		return
	}
	dest := net.JoinHostPort(d.DestAddr, strconv.FormatUint(uint64(d.DestPort), 10))
	refuse := func(reason gossh.RejectionReason, why string) {
		s.emitRequest(c, tc, 0, control.StepDirectTCPIP, false, dest+": "+why)
		newChan.Reject(reason, why)
	}
	switch {
	case c.arm.Jump == nil:
		refuse(gossh.Prohibited, "this host is not a jump host")
		return
	case tc.relay != nil:
		refuse(gossh.Prohibited, "the target is not a jump host")
		return
	case dest != c.arm.Jump.Target:
		refuse(gossh.Prohibited, "this jump host opens tunnels to "+c.arm.Jump.Target+" only")
		return
	}
	r := newRelay(tc)
	target, port, err := s.dialTarget(c, r, dest)
	if err != nil {
		// As sshd: the channel open fails with the connect error, and the
		// jump-host connection goes on.
		refuse(gossh.ConnectionFailed, "connect to "+dest+" failed: "+err.Error())
		return
	}
	defer func() {
		c.mu.Lock()
		delete(c.relays, port)
		c.mu.Unlock()
	}()
	ch, reqs, err := newChan.Accept()
	if err != nil {
		target.Close()
		return
	}
	s.emitRequest(c, tc, 0, control.StepDirectTCPIP, true, dest)
	go gossh.DiscardRequests(reqs)
	if c.isEnded() {
		ch.Close()
		target.Close()
		return
	}

	var wg, copies sync.WaitGroup
	tunnelDone := make(chan struct{})
	copies.Go(func() { // tool -> target
		_, err := io.Copy(target, ch)
		if err == nil {
			target.(*net.TCPConn).CloseWrite()
		} else {
			target.Close()
		}
	})
	copies.Go(func() { // target -> tool
		buf := make([]byte, 32<<10)
		for {
			n, rerr := target.Read(buf)
			if n > 0 {
				if _, werr := ch.Write(buf[:n]); werr != nil {
					target.Close()
					break
				}
				r.update(func() { r.relayed += int64(n) })
			}
			if rerr != nil {
				if errors.Is(rerr, io.EOF) {
					ch.CloseWrite()
				} else {
					// The target's connection failed: the tunnel is gone.
					ch.Close()
				}
				break
			}
		}
		r.update(func() { r.ended = true })
	})
	// The jump-host connection dropping, or the case ending, ends the
	// tunnel at once, as sshd frees a dead connection's channels: the
	// target sees its transport end.
	wg.Go(func() {
		select {
		case <-tc.lost:
		case <-c.ended:
		case <-tunnelDone:
			return
		}
		ch.Close()
		target.Close()
	})
	copies.Wait()
	close(tunnelDone)
	wg.Wait()
	ch.Close()
	target.Close()
}

// dialTarget connects the relay to the target. Its local port is bound
// before the connection is made and r registered under it, so that the
// target connection's preamble, which names that port, always finds it.
func (s *Server) dialTarget(c *caseState, r *relay, dest string) (net.Conn, int, error) {
	port := 0
	d := net.Dialer{Timeout: jumpDialTimeout, ControlContext: func(_ context.Context, network, _ string, rc syscall.RawConn) error {
		var err error
		cerr := rc.Control(func(fd uintptr) {
			var sa syscall.Sockaddr = &syscall.SockaddrInet4{}
			if network == "tcp6" {
				sa = &syscall.SockaddrInet6{}
			}
			if err = syscall.Bind(int(fd), sa); err != nil {
				return
			}
			var got syscall.Sockaddr
			if got, err = syscall.Getsockname(int(fd)); err != nil {
				return
			}
			switch a := got.(type) {
			case *syscall.SockaddrInet4:
				port = a.Port
			case *syscall.SockaddrInet6:
				port = a.Port
			}
		})
		if cerr != nil {
			return cerr
		}
		if err != nil {
			return fmt.Errorf("bind: %w", err)
		}
		c.mu.Lock()
		c.relays[port] = r
		c.mu.Unlock()
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.ended:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := d.DialContext(ctx, "tcp", dest)
	if err != nil {
		if port != 0 {
			c.mu.Lock()
			delete(c.relays, port)
			c.mu.Unlock()
		}
		return nil, 0, err
	}
	return conn, port, nil
}

// holdVia fills in, for a hold armed on the first hop of a case with a jump
// host, the jump-host connection carrying tc's tunnel and how many bytes the
// server had written on it once the tunnel relayed ev.Sent bytes.
func (s *Server) holdVia(c *caseState, tc *tconn, ev *control.Event) {
	if c.arm.Jump == nil || c.arm.Jump.Hop != fault.ClientJump || tc.relay == nil {
		return
	}
	ev.Via = tc.relay.via.n
	// ViaSent stays 0 when the tunnel ended first: the rig then knows the
	// target's bytes never all reached the tool (there is no flush to cut
	// after), rather than cutting after fewer of them.
	if sent, ok := tc.relay.relayedThrough(ev.Sent, c.ended, s.closing); ok {
		ev.ViaSent = sent
	}
}
