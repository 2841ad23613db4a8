package cutter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/sshrig/sshrig/fault"
)

// sentLimit bounds a connection's wait for its send queue to empty before
// a reset; a client that stopped reading keeps it full.
const sentLimit = time.Second

// bufSize is each pump's chunk size. It bounds how many bytes a cut can drop
// between a pump's read and its write.
const bufSize = 32 << 10

type dir int

const (
	toServer dir = iota // client -> upstream
	toClient            // upstream -> client
)

func (d dir) String() string {
	if d == toServer {
		return "client->server"
	}
	return "server->client"
}

type connState int

const (
	stDialing connState = iota
	stOpen
	stCutting // Cut is stopping the pumps
	stCut     // the cut's socket action was taken
	stClosed
)

// sock is one of a connection's sockets; closed is guarded by conn.mu so each
// socket is closed exactly once whoever gets there first (pump error, cut,
// drain, Cutter.Close).
type sock struct {
	*net.TCPConn
	closed bool
}

func (s *sock) close() error {
	if s.TCPConn == nil || s.closed {
		return nil
	}
	s.closed = true
	return s.TCPConn.Close()
}

type conn struct {
	n        int
	accepted time.Time

	mu       sync.Mutex
	state    connState
	kind     fault.Cut // while stCutting or stCut
	client   sock
	up       sock // TCPConn nil until dialled
	toServer int64
	toClient int64
	// s2cEnded: the s->c pump returned, so no more server->client byte will
	// be delivered and a flush above toClient can never be reached.
	s2cEnded  bool
	pumps     int           // pumps still running
	pumpsDone chan struct{} // closed when no pump runs any more (or none ever will)
	// limit is the flush of a cut waiting for it, -1 if none. The s->c pump
	// writes no byte past it, so the cut lands exactly there.
	limit int64
	// changed is closed (and reset to nil) when something a waiter cares
	// about changes: toClient grew, the state changed, the limit went away.
	// It is only allocated when someone waits, so a busy pump pays nothing.
	changed  chan struct{}
	err      error // why the connection closed, if not cleanly
	byCutter bool  // closed by Cutter.Close
	// stopped is closed when the connection stops forwarding (a cut, an
	// error, Close): a pump waiting on a slow-link fault wakes at once.
	stopped       chan struct{}
	shaped        bool // slow-link faults are on
	stopSignalled bool
	// unfault removes a kernel fault that stays until the cutter closes.
	unfault func() error
}

func newConn(n int, client *net.TCPConn) *conn {
	return &conn{
		n:         n,
		accepted:  time.Now(),
		state:     stDialing,
		client:    sock{TCPConn: client},
		pumpsDone: make(chan struct{}),
		limit:     -1,
		stopped:   make(chan struct{}),
	}
}

// stopLocked wakes pumps waiting on a slow-link fault; the state already
// says forwarding stopped.
func (cn *conn) stopLocked() {
	if !cn.stopSignalled {
		cn.stopSignalled = true
		close(cn.stopped)
	}
}

// wait waits d, or less if forwarding stops meanwhile; false if it stopped.
func (cn *conn) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-cn.stopped:
		return false
	}
}

// waitLocked returns a channel closed at the next notifyLocked.
func (cn *conn) waitLocked() <-chan struct{} {
	if cn.changed == nil {
		cn.changed = make(chan struct{})
	}
	return cn.changed
}

func (cn *conn) notifyLocked() {
	if cn.changed != nil {
		close(cn.changed)
		cn.changed = nil
	}
}

func (cn *conn) stateLocked() string {
	switch cn.state {
	case stDialing:
		return "dialing"
	case stOpen:
		return "open"
	case stCutting:
		return "cutting:" + cn.kind.String()
	case stCut:
		return "cut:" + cn.kind.String()
	}
	return "closed"
}

func (cn *conn) stats() ConnStats {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	s := ConnStats{
		Conn:     cn.n,
		Accepted: cn.accepted,
		ToServer: cn.toServer,
		ToClient: cn.toClient,
		State:    cn.stateLocked(),
		Client:   addrPort(cn.client.RemoteAddr()),
		Listener: addrPort(cn.client.LocalAddr()),
	}
	if cn.err != nil {
		s.Err = cn.err.Error()
	}
	return s
}

// pump forwards one direction until EOF, an error, a cut or Close, with the
// slow-link faults of sh (nil for none).
func (cn *conn) pump(d dir, sh *shaper) {
	// The sockets are set before the pumps start and never change.
	src, dst := cn.client.TCPConn, cn.up.TCPConn
	if d == toClient {
		src, dst = dst, src
	}
	buf := make([]byte, bufSize)
	for {
		n, rerr := src.Read(buf)
		for p, first := buf[:n], true; len(p) > 0; first = false {
			want := len(p)
			if sh != nil {
				var wait time.Duration
				want, wait = sh.plan(want, first, time.Now())
				if !cn.wait(wait) {
					cn.pumpEnd(d, dst, nil)
					return
				}
			}
			m, ok := cn.allow(d, want)
			if !ok {
				// Cut or closed: whatever is left of the chunk is dropped.
				cn.pumpEnd(d, dst, nil)
				return
			}
			w, werr := dst.Write(p[:m])
			if sh != nil {
				sh.wrote(w, time.Now())
			}
			cn.count(d, w)
			if werr != nil {
				cn.pumpEnd(d, dst, werr)
				return
			}
			p = p[w:]
		}
		if rerr != nil {
			if d == toClient {
				cn.passReset(rerr)
			}
			cn.pumpEnd(d, dst, rerr)
			return
		}
	}
}

// allow returns how many of want bytes the pump may write now, or false if
// forwarding has stopped. The s->c pump is held at a waiting cut's limit until
// the cut happens (or gives up).
func (cn *conn) allow(d dir, want int) (int, bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	for {
		if cn.state != stOpen {
			return 0, false
		}
		if d == toServer || cn.limit < 0 {
			return want, true
		}
		if room := cn.limit - cn.toClient; room > 0 {
			return int(min(int64(want), room)), true
		}
		ch := cn.waitLocked()
		cn.mu.Unlock()
		<-ch
		cn.mu.Lock()
	}
}

func (cn *conn) count(d dir, n int) {
	if n == 0 {
		return
	}
	cn.mu.Lock()
	if d == toServer {
		cn.toServer += int64(n)
	} else {
		cn.toClient += int64(n)
		cn.notifyLocked() // a flush waiter may be satisfied now
	}
	cn.mu.Unlock()
}

// pumpEnd handles the end of pump d: err is the read or write error that ended
// it, or nil when a cut or Close stopped it.
func (cn *conn) pumpEnd(d dir, dst *net.TCPConn, err error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.state == stOpen {
		if err == io.EOF {
			// Half-close: pass the peer's FIN on and keep the other
			// direction going.
			if e := dst.CloseWrite(); e != nil {
				cn.failLocked(fmt.Errorf("%v: close write: %w", d, e))
			}
		} else {
			cn.failLocked(fmt.Errorf("%v: %w", d, err))
		}
	}
	// Otherwise a cut or Close owns the sockets now: touch nothing.

	cn.pumps--
	if d == toClient {
		cn.s2cEnded = true
	}
	if cn.pumps == 0 {
		if cn.state == stOpen {
			// Both directions ended cleanly.
			cn.state = stClosed
			cn.client.close()
			cn.up.close()
		}
		close(cn.pumpsDone)
	}
	cn.notifyLocked()
}

// failLocked closes both sockets after an error; the other pump then fails
// too and finds the state closed.
func (cn *conn) failLocked(err error) {
	cn.state = stClosed
	cn.stopLocked()
	cn.err = err
	cn.client.close()
	cn.up.close()
	cn.notifyLocked()
}

func (cn *conn) cuttableLocked() error {
	switch cn.state {
	case stCutting, stCut:
		return fmt.Errorf("%w: connection %d is already %s", ErrAlreadyCut, cn.n, cn.stateLocked())
	case stClosed:
		return cn.closedErrLocked()
	}
	if cn.limit >= 0 {
		return fmt.Errorf("%w: another cut of connection %d is waiting for its flush of %d bytes", ErrAlreadyCut, cn.n, cn.limit)
	}
	return nil
}

func (cn *conn) closedErrLocked() error {
	switch {
	case cn.byCutter:
		return fmt.Errorf("%w (connection %d)", ErrClosed, cn.n)
	case cn.err != nil:
		return fmt.Errorf("%w: connection %d closed after %d server->client bytes: %w", ErrConnClosed, cn.n, cn.toClient, cn.err)
	}
	return fmt.Errorf("%w: connection %d closed after %d server->client bytes (both directions ended)", ErrConnClosed, cn.n, cn.toClient)
}

// withdrawLocked drops a waiting cut's limit and releases the s->c pump.
func (cn *conn) withdrawLocked() {
	cn.limit = -1
	cn.notifyLocked()
}

// cut stops connection cn once flush server->client bytes reached the client
// and takes kind's socket action (see the package documentation).
func (cn *conn) cut(ctx context.Context, kind fault.Cut, flush int64, o *options, wg *sync.WaitGroup) (Report, error) {
	start := time.Now()
	if rep, err := cn.awaitFlush(ctx, kind, flush, o.flushWaitHook); err != nil {
		return rep, err
	}
	// awaitFlush returned with cn.mu held: nothing changed since the flush
	// condition held.
	flushWait := time.Since(start)
	cn.stopPumpsLocked(kind)
	return cn.finishCut(kind, flush, flushWait, o, wg)
}

// awaitFlush takes cn.mu and waits until the connection is open and flush
// bytes reached the client socket, holding the s->c pump at flush meanwhile.
// It returns nil with cn.mu still held, or an error with cn.mu released and
// the limit withdrawn.
func (cn *conn) awaitFlush(ctx context.Context, kind fault.Cut, flush int64, hook func(int, int64, int64)) (Report, error) {
	cn.mu.Lock()
	if err := cn.cuttableLocked(); err != nil {
		cn.mu.Unlock()
		return Report{}, err
	}
	cn.limit = flush
	// The flush condition: the connection is open and flush bytes reached
	// the client socket. Checked first, so a ctx that ends at the same time
	// as the flush arrives does not cancel a cut that can happen.
	for cn.state != stOpen || cn.toClient < flush {
		rep := Report{Conn: cn.n, Kind: kind, Flush: flush, Delivered: cn.toClient, Unsent: -1}
		if cn.state == stClosed {
			err := cn.closedErrLocked()
			cn.withdrawLocked()
			cn.mu.Unlock()
			if errors.Is(err, ErrClosed) {
				return rep, fmt.Errorf("cutter: connection %d: %d of %d server->client bytes delivered when the cutter closed: %w", cn.n, rep.Delivered, flush, err)
			}
			return rep, fmt.Errorf("cutter: connection %d: %d of %d server->client bytes delivered, the flush can never be reached: %w", cn.n, rep.Delivered, flush, err)
		}
		if cn.s2cEnded {
			cn.withdrawLocked()
			cn.mu.Unlock()
			return rep, fmt.Errorf("%w: connection %d: the server side ended after %d of %d server->client bytes, the flush can never be reached", ErrConnClosed, cn.n, rep.Delivered, flush)
		}
		if err := ctx.Err(); err != nil {
			cn.withdrawLocked()
			cn.mu.Unlock()
			return rep, fmt.Errorf("cutter: connection %d: %d of %d server->client bytes delivered when the flush wait ended: %w", cn.n, rep.Delivered, flush, err)
		}
		ch := cn.waitLocked()
		cn.mu.Unlock()
		if hook != nil {
			hook(cn.n, rep.Delivered, flush)
		}
		select {
		case <-ch:
		case <-ctx.Done():
		}
		cn.mu.Lock()
	}
	return Report{}, nil
}

// stopPumpsLocked marks the connection as cutting for kind, releases cn.mu
// (held on entry) and returns once both pumps returned.
func (cn *conn) stopPumpsLocked(kind fault.Cut) {
	// Stop both pumps at once: the state makes each return as soon as it
	// looks, and deadlines in the past get them out of a blocked Read or
	// Write without closing anything (a blackhole must keep the sockets).
	cn.state = stCutting
	cn.stopLocked()
	cn.kind = kind
	cn.limit = -1
	cn.notifyLocked() // releases a pump held at the limit
	cn.mu.Unlock()
	now := time.Now()
	for _, s := range []*net.TCPConn{cn.client.TCPConn, cn.up.TCPConn} {
		// Errors only mean Cutter.Close got there first; finishCut checks.
		s.SetReadDeadline(now)
		s.SetWriteDeadline(now)
	}
	<-cn.pumpsDone
}

// finishCut takes kind's socket action on the stopped connection, unless
// Cutter.Close got there first, and reports the cut.
func (cn *conn) finishCut(kind fault.Cut, flush int64, flushWait time.Duration, o *options, wg *sync.WaitGroup) (Report, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	rep := Report{Conn: cn.n, Kind: kind, Flush: flush, Delivered: cn.toClient, FlushWait: flushWait, Unsent: -1}
	if cn.state != stCutting {
		return rep, fmt.Errorf("cutter: connection %d: %w while cutting", cn.n, ErrClosed)
	}
	kernel := o.kernelCut(kind)
	if kind == fault.Reset || kernel {
		// A kernel fault also waits: a rule installed while delivered
		// bytes sit unsent would drop them.
		//
		// The kernel may hold the last bytes written back for a moment
		// rather than transmit them (TCP small queues: a shaped pump's
		// small pieces, or softirqs starved on a busy machine); an RST
		// would discard bytes the flush counted as delivered. The pumps
		// are stopped, so the queue only shrinks: wait for it to empty.
		// On a quiet loopback it is empty already and this returns at
		// once.
		awaitSent(cn.client.TCPConn, sentLimit)
	}
	rep.Unsent = unsent(cn.client.TCPConn)
	if o.beforeSocketAction != nil {
		o.beforeSocketAction(cn.n, cn.client.TCPConn)
	}
	var errs []error
	if kernel {
		errs = cn.kernelCutLocked(kind, o.kernel)
	} else {
		errs = cn.cutSocketsLocked(kind, wg)
	}
	rep.At = time.Now()
	cn.state = stCut
	cn.notifyLocked()
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("cutter: connection %d: %v cut: %w", cn.n, kind, err)
	}
	return rep, nil
}

// cutSocketsLocked takes kind's action on both sockets of the stopped
// connection and returns what failed; cn.mu is held with state stCutting.
func (cn *conn) cutSocketsLocked(kind fault.Cut, wg *sync.WaitGroup) []error {
	var errs []error
	switch kind {
	case fault.Reset:
		for _, s := range []*sock{&cn.client, &cn.up} {
			// Linger 0 makes close(2) abort the connection with an RST
			// instead of the FIN handshake.
			if err := s.SetLinger(0); err != nil {
				errs = append(errs, err)
			}
			if err := s.close(); err != nil {
				errs = append(errs, err)
			}
		}
	case fault.Close:
		for _, s := range []*sock{&cn.client, &cn.up} {
			if err := s.CloseWrite(); err != nil {
				switch {
				case s == &cn.client && peerGone(err):
					// The tool's end went (an RST) after the pumps
					// stopped: as if it had gone before the cut.
					err = fmt.Errorf("%w: the tool's end went as the cut came: %v", ErrConnClosed, err)
				case peerGone(err):
					// The server's end went: a server holding at the
					// moment closes nothing itself, so it followed the
					// tool, whose end had gone first (its FIN reached
					// the server before the pumps stopped).
					err = fmt.Errorf("%w: the server's end went after the tool's, as the cut came: %v", ErrConnClosed, err)
				}
				errs = append(errs, err)
			}
		}
		// Holding cn.mu with state stCutting means Cutter.Close has not
		// reached this connection, hence not its wg.Wait: Go is safe here.
		for _, s := range []*sock{&cn.client, &cn.up} {
			wg.Go(func() { cn.drain(s) })
		}
	case fault.Blackhole:
		// Nothing: the pumps are gone and the sockets stay open until
		// Cutter.Close. The deadlines stay in the past so that nothing
		// could read them by accident.
	}
	return errs
}

// kernelCutLocked has k install kind's fault for the stopped connection:
// the tool's side meets what the kernel does (kernelnet), the server side
// meets the same as under the proxy (an RST where the transport drops,
// nothing for a blackhole).
func (cn *conn) kernelCutLocked(kind fault.Cut, k Kernel) []error {
	abort := func() error {
		if err := cn.client.SetLinger(0); err != nil {
			return err
		}
		return cn.client.close()
	}
	unfault, err := k.Cut(kind, addrPort(cn.client.RemoteAddr()), addrPort(cn.client.LocalAddr()), abort)
	cn.unfault = unfault
	errs := []error{err}
	if kind.DropsTransport() {
		if err := cn.up.SetLinger(0); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, cn.up.close())
	}
	return errs
}

// peerGone reports whether a socket call failed because the peer had
// already ended the connection with an RST.
func peerGone(err error) bool {
	return errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// drain reads and discards from s after a Close cut until the peer's FIN (or
// any error, or Cutter.Close), then closes s. Closing earlier, with unread
// bytes in the receive queue, would make the kernel send an RST, and a Close
// cut must never send one.
func (cn *conn) drain(s *sock) {
	s.SetReadDeadline(time.Time{})
	buf := make([]byte, 4096)
	for {
		if _, err := s.Read(buf); err != nil {
			break
		}
	}
	cn.mu.Lock()
	s.close()
	cn.mu.Unlock()
}

// shutdown closes cn's sockets for Cutter.Close.
func (cn *conn) shutdown() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	switch cn.state {
	case stDialing, stOpen, stCutting:
		cn.state = stClosed
		cn.byCutter = true
	}
	cn.stopLocked()
	var errs []error
	for _, s := range []*sock{&cn.client, &cn.up} {
		if err := s.close(); err != nil {
			errs = append(errs, fmt.Errorf("cutter: connection %d: close: %w", cn.n, err))
		}
	}
	if cn.unfault != nil {
		// After the sockets: whatever they send on closing meets the
		// fault too, as the rest of the connection did.
		if err := cn.unfault(); err != nil {
			errs = append(errs, fmt.Errorf("cutter: connection %d: %w", cn.n, err))
		}
		cn.unfault = nil
	}
	cn.notifyLocked()
	return errors.Join(errs...)
}

func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}
