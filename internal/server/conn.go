package server

import (
	"bufio"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

type connKey struct{}

// handleRaw reads the preamble, attributes the connection to its case,
// announces the accept moment and hands the connection to the SSH server.
func (s *Server) handleRaw(raw net.Conn) {
	// Until it names its case, only Close can reach this connection.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		raw.Close()
		return
	}
	s.unattributed[raw] = true
	s.mu.Unlock()
	raw.SetReadDeadline(time.Now().Add(preambleTimeout))
	br := bufio.NewReader(raw)
	pre, err := control.ReadPreamble(br)
	raw.SetReadDeadline(time.Time{})
	s.mu.Lock()
	delete(s.unattributed, raw)
	s.mu.Unlock()
	if err != nil {
		s.emit(control.Event{Kind: control.ConnRejected, Detail: err.Error()})
		raw.Close()
		return
	}
	s.mu.Lock()
	c := s.cases[pre.Case]
	s.mu.Unlock()
	if c == nil || !c.work.enter() {
		s.emit(control.Event{Kind: control.ConnRejected, Case: pre.Case, Conn: pre.Conn, Detail: "no such case"})
		raw.Close()
		return
	}
	defer c.work.leave()

	tc := &tconn{Conn: raw, r: br, s: s, c: c, n: pre.Conn, lost: make(chan struct{})}
	c.mu.Lock()
	if _, dup := c.conns[tc.n]; dup {
		c.mu.Unlock()
		s.emit(control.Event{Kind: control.ConnRejected, Case: c.id, Conn: tc.n, Detail: "duplicate connection number"})
		raw.Close()
		return
	}
	c.conns[tc.n] = tc
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.conns, tc.n)
		c.mu.Unlock()
		tc.closeByServer()
	}()
	// A case ending between the lookup and the registration above would not
	// have closed this connection.
	if c.isEnded() {
		return
	}

	accepted := control.Event{Kind: control.ConnAccepted, Case: c.id, Conn: tc.n}
	if c.arm.Jump != nil {
		if tc.n < control.JumpTargetConn {
			accepted.Detail = control.JumpHostConn
		} else if tc.relay = c.tunnelOf(pre.From); tc.relay != nil {
			accepted.Via = tc.relay.via.n
		} else {
			s.emit(control.Event{Kind: control.ServerProblem, Case: c.id, Conn: tc.n,
				Detail: "the connection reached the target without the jump host's tunnel (from " + pre.From + "): the case's moment does not hold on it"})
		}
	}
	s.emit(accepted)
	_, _, tc.stepArmed = s.emitRequest(c, tc, 0, control.StepConnection, true, "")
	s.reach(c, tc, 0, fault.Accept)
	if c.isEnded() {
		return
	}
	s.ssh.HandleConn(tc)
}

// tconn is the server's view of one proxied TCP connection. It counts the
// bytes the server wrote (so a moment can say how many bytes must reach the
// client before the cut), notices the first transport error, and hosts the
// handshake and auth moments, which happen inside the SSH library.
type tconn struct {
	net.Conn
	r io.Reader // the preamble reader, which may hold bytes already read

	s *Server
	c *caseState
	n int // the cutter's connection number
	// relay, for a target connection of a case with a jump host, is the
	// tunnel it came through (jump.go); set before its first moment.
	relay *relay
	// stepArmed: this connection is the one of the tool's conversation the
	// case is armed at (its handshake or authentication; caseState.armedOn).
	// Set before the connection's first moment.
	stepArmed bool

	sent atomic.Int64

	mu          sync.Mutex
	writes      int
	authOK      bool // authentication succeeded; the next write is USERAUTH_SUCCESS
	authHeld    bool
	authRefusal string // why the last key was refused

	lostOnce sync.Once
	lost     chan struct{}
	byServer atomic.Bool
	// dead: the server serving the connection crashed, or its host went
	// down (farfault.go): none of its sessions starts or says anything
	// again.
	dead atomic.Bool
}

func (t *tconn) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil {
		t.markLost(err)
	}
	return n, err
}

func (t *tconn) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.writes++
	w := t.writes
	t.mu.Unlock()
	// The server's first write is its version line, written before it reads
	// the client's; its second is KEXINIT, written after. Holding before the
	// second write lands a cut inside the key exchange.
	if w == 2 {
		t.s.reach(t.c, t, 0, fault.Handshake)
	}
	n, err := t.Conn.Write(p)
	t.sent.Add(int64(n))
	if err != nil {
		t.markLost(err)
		return n, err
	}
	t.mu.Lock()
	atAuth := t.authOK && !t.authHeld
	if atAuth {
		t.authHeld = true
	}
	t.mu.Unlock()
	// The write that follows a successful authentication is
	// USERAUTH_SUCCESS; holding after it, inside the library's handshake,
	// keeps any channel from opening until the cut.
	if atAuth {
		t.s.reach(t.c, t, 0, fault.Auth)
	}
	return n, err
}

// authLog is the SSH library's authentication log callback. The library calls
// it for a signed public-key request right before it writes USERAUTH_SUCCESS.
func (t *tconn) authLog(_ gossh.ConnMetadata, method string, err error) {
	if method == "none" {
		return
	}
	if err != nil {
		t.mu.Lock()
		why := t.authRefusal
		t.mu.Unlock()
		if why == "" {
			why = err.Error()
		}
		t.s.emit(control.Event{Kind: control.AuthRejected, Case: t.c.id, Conn: t.n, Detail: method + ": " + why})
		return
	}
	t.mu.Lock()
	t.authOK = true
	t.mu.Unlock()
	t.s.emit(control.Event{Kind: control.AuthAccepted, Case: t.c.id, Conn: t.n, Detail: method})
}

func (t *tconn) setAuthRefusal(why string) {
	t.mu.Lock()
	t.authRefusal = why
	t.mu.Unlock()
}

func (t *tconn) markLost(err error) {
	t.lostOnce.Do(func() {
		detail := err.Error()
		if t.byServer.Load() {
			detail = "closed by server"
		}
		// Lost before it is said: the rig releases a hold once it has seen
		// the event, and the held request's decision (a hangup skips the
		// command) must then find the connection lost. Closed after the
		// emit, a goroutine preempted between the two let a command start
		// on a connection the rig had already seen die.
		close(t.lost)
		t.s.emit(control.Event{Kind: control.TransportLost, Case: t.c.id, Conn: t.n, Detail: detail})
		if h := testHookLossSaid.Load(); h != nil {
			(*h)(t.isLost())
		}
	})
}

// testHookLossSaid, set by tests only, runs right after a connection's
// TransportLost event left, with whether the connection was lost by then.
var testHookLossSaid atomic.Pointer[func(lost bool)]

func (t *tconn) isLost() bool {
	select {
	case <-t.lost:
		return true
	default:
		return false
	}
}

func (t *tconn) closeByServer() {
	t.byServer.Store(true)
	t.Conn.Close()
	t.markLost(net.ErrClosed)
}

// Close is called by the SSH library when it is done with the connection.
func (t *tconn) Close() error {
	t.byServer.Store(true)
	err := t.Conn.Close()
	t.markLost(net.ErrClosed)
	return err
}
