package cutter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// DefaultDialTimeout bounds the upstream dial of each accepted connection.
const DefaultDialTimeout = 5 * time.Second

// Errors a caller may want to tell apart; the returned errors wrap them and
// say which connection and why.
var (
	// ErrClosed: the cutter was closed.
	ErrClosed = errors.New("cutter: closed")
	// ErrUnknownConn: no connection has that number (yet).
	ErrUnknownConn = errors.New("cutter: unknown connection")
	// ErrAlreadyCut: the connection was already cut, or another cut of it is
	// waiting for its flush.
	ErrAlreadyCut = errors.New("cutter: connection already cut")
	// ErrConnClosed: the connection ended (both directions done, or an error)
	// before the cut could happen.
	ErrConnClosed = errors.New("cutter: connection already closed")
	// ErrNotSocketCut: the kind is not something the cutter does to a socket.
	ErrNotSocketCut = errors.New("cutter: kill-helper is not a socket cut")
	// ErrNeedsKernel: the kind exists only on the kernel network.
	ErrNeedsKernel = errors.New("cutter: vanish needs the kernel network (--net kernel)")
)

// Option configures a Cutter.
type Option func(*options)

type options struct {
	dialTimeout time.Duration
	onAccept    func(conn int)
	// flushWaitHook, if set, is called each time Cut starts waiting for its
	// flush. Tests use it to act exactly when the wait has begun instead of
	// sleeping.
	flushWaitHook func(conn int, delivered, want int64)
	// beforeSocketAction, if set, is called with the stopped connection's
	// tool-side socket just before the cut's socket action; tests use it to
	// have the tool's end go at exactly that point.
	beforeSocketAction func(conn int, client *net.TCPConn)
	link               Link   // slow-link faults (link.go)
	kernel             Kernel // kernel faults (--net kernel), nil under the proxy
	connBase           int    // connection numbers start after it (WithFirstConn)
}

// Kernel installs a cut's fault in the kernel for one connection, the rig's
// kernel network (--net kernel). Cut is called once the connection's pumps
// stopped and its send queue toward the tool emptied, with the tool's end
// (client), the cutter's end (listener) and abort, which closes the
// cutter's client socket with an RST; it returns what removes the fault
// once the case is over (nil if nothing stays). kernelnet.Net implements
// it.
type Kernel interface {
	Cut(kind fault.Cut, client, listener netip.AddrPort, abort func() error) (remove func() error, err error)
}

// WithKernel makes the kernel cut kinds (fault.KernelCuts) kernel faults:
// k installs them, and the vanish kind becomes possible.
func WithKernel(k Kernel) Option {
	return func(o *options) { o.kernel = k }
}

// kernelCut reports whether the cutter hands kind to the kernel.
func (o *options) kernelCut(kind fault.Cut) bool {
	return o.kernel != nil && slices.Contains(fault.KernelCuts(), kind)
}

// WithDialTimeout bounds the dial of the upstream connection (default
// DefaultDialTimeout). A connection whose dial fails is closed and shows the
// error in Stats.
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) { o.dialTimeout = d }
}

// WithOnAccept registers f to be called with each accepted connection's
// number, before its upstream dial starts, so the rig knows the number before
// the server can see its preamble. f runs on the accept goroutine and must not
// block.
func WithOnAccept(f func(conn int)) Option {
	return func(o *options) { o.onAccept = f }
}

// WithFirstConn numbers the cutter's connections from first on (default 1):
// a case's second cutter, for a jump host's connections to the target,
// numbers its own apart from the first's, so the server's events and the
// cuts name each connection once.
func WithFirstConn(first int) Option {
	return func(o *options) { o.connBase = first - 1 }
}

func withFlushWaitHook(f func(conn int, delivered, want int64)) Option {
	return func(o *options) { o.flushWaitHook = f }
}

func withBeforeSocketAction(f func(conn int, client *net.TCPConn)) Option {
	return func(o *options) { o.beforeSocketAction = f }
}

// Cutter is a TCP proxy for one test case. See the package documentation.
type Cutter struct {
	caseID string
	opts   options
	ln     *net.TCPListener
	addr   string

	// dialCtx is cancelled by Close so that an upstream dial in flight does
	// not hold Close up for the whole dial timeout.
	dialCtx    context.Context
	cancelDial context.CancelFunc

	// wg counts every goroutine the cutter starts: the accept loop, each
	// connection's dial, its two pumps and any drains after a Close cut.
	wg sync.WaitGroup

	mu        sync.Mutex
	upstream  string // where connections are dialled; SetUpstream moves it
	closed    bool
	conns     []*conn // conns[i] is connection opts.connBase+i+1
	acceptErr error
	// gate, when not nil, holds connections accepted meanwhile before they
	// reach the server (HoldNew); closing it lets them through (OpenNew).
	gate chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Report describes a cut that happened.
type Report struct {
	Conn      int
	Kind      fault.Cut
	Flush     int64         // server->client bytes the cut waited for
	Delivered int64         // server->client bytes written to the client when the cut happened (>= Flush)
	FlushWait time.Duration // from the Cut call until the flush condition held
	// Unsent is how many of the delivered bytes were still in the cutter's
	// send queue, not yet transmitted to the client, when the cut happened
	// (Linux SIOCOUTQNSD; -1 where unknown). A Reset waits (up to a
	// second) for the queue to empty first, so this is 0 unless the client
	// stopped reading; a Reset discards such bytes: the client never sees
	// them.
	Unsent int64
	At     time.Time // when the socket action was taken
}

// ConnStats is a snapshot of one connection.
type ConnStats struct {
	Conn     int
	Accepted time.Time
	ToServer int64 // client->server bytes written to the upstream (preamble not counted)
	ToClient int64 // server->client bytes written to the client
	// State is "dialing", "open", "cutting:<kind>", "cut:<kind>" (kind as in
	// fault.Cut.String) or "closed". A cut connection stays "cut:<kind>" after
	// its sockets are gone.
	State string
	Err   string // why a closed connection closed, if not a clean end or the cutter's Close
	// Client is the tool's end of the connection; Listener the cutter's.
	// Together they identify the tool's socket (kill-helper finds its owner).
	Client, Listener netip.AddrPort
}

// Listen starts a cutter on 127.0.0.1 with a kernel-chosen port, forwarding
// to upstream ("host:port") and marking every upstream connection with caseID
// in its preamble.
func Listen(upstream, caseID string, opts ...Option) (*Cutter, error) {
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("cutter: %w", err)
	}
	return ListenOn(ln, upstream, caseID, opts...)
}

// ListenOn starts a cutter on ln, which it owns from now on (the kernel
// network's listener lives in the server's namespace). It closes ln if it
// fails.
func ListenOn(ln *net.TCPListener, upstream, caseID string, opts ...Option) (*Cutter, error) {
	fail := func(err error) (*Cutter, error) {
		ln.Close()
		return nil, err
	}
	if err := control.ValidID(caseID); err != nil {
		return fail(fmt.Errorf("cutter: %w", err))
	}
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return fail(fmt.Errorf("cutter: upstream %q: %w", upstream, err))
	}
	o := options{dialTimeout: DefaultDialTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.dialTimeout <= 0 {
		return fail(fmt.Errorf("cutter: dial timeout %v must be positive", o.dialTimeout))
	}
	if err := o.link.Validate(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cutter{
		upstream:   upstream,
		caseID:     caseID,
		opts:       o,
		ln:         ln,
		addr:       ln.Addr().String(),
		dialCtx:    ctx,
		cancelDial: cancel,
	}
	c.wg.Go(c.acceptLoop)
	return c, nil
}

// HoldNew makes connections accepted from now on wait before they reach the
// server, until OpenNew. The tool's side connects (the kernel accepts it)
// and waits for the server's greeting. The rig holds new connections while
// the server settles a request it held at a moment: a real server settles
// it the instant the transport dies, so nothing the tool sends afterwards
// may reach the server before that.
func (c *Cutter) HoldNew() {
	c.mu.Lock()
	if c.gate == nil {
		c.gate = make(chan struct{})
	}
	c.mu.Unlock()
}

// OpenNew lets held and later connections through.
func (c *Cutter) OpenNew() {
	c.mu.Lock()
	if c.gate != nil {
		close(c.gate)
		c.gate = nil
	}
	c.mu.Unlock()
}

// SetUpstream makes connections dialled from now on go to upstream: the
// server of a host that restarted may listen where it did not before.
func (c *Cutter) SetUpstream(upstream string) error {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return fmt.Errorf("cutter: upstream %q: %w", upstream, err)
	}
	c.mu.Lock()
	c.upstream = upstream
	c.mu.Unlock()
	return nil
}

// Addr is the address the tool dials, "127.0.0.1:port".
func (c *Cutter) Addr() string { return c.addr }

func (c *Cutter) acceptLoop() {
	for {
		tc, err := c.ln.AcceptTCP()
		if err != nil {
			c.mu.Lock()
			if !c.closed {
				// Not caused by Close (e.g. EMFILE): stop accepting and let
				// Close report it rather than spin on a persistent error.
				c.acceptErr = fmt.Errorf("cutter: accept: %w", err)
			}
			c.mu.Unlock()
			return
		}
		if c.Adopt(tc) != nil { // closed meanwhile
			return
		}
	}
}

// dial connects the upstream side of cn, writes the preamble and starts the
// pumps.
func (c *Cutter) dial(cn *conn) {
	d := net.Dialer{Timeout: c.opts.dialTimeout}
	c.mu.Lock()
	upstream := c.upstream
	c.mu.Unlock()
	nc, err := d.DialContext(c.dialCtx, "tcp", upstream)

	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.state != stDialing {
		// The cutter closed while we dialled.
		if nc != nil {
			nc.Close()
		}
		return
	}
	if err == nil {
		// The preamble goes out before any client byte because the pumps do
		// not exist yet. It is written under cn.mu so that whoever has seen
		// it (the server, hence the rig) finds the connection open in Stats
		// and Cut. A fresh socket's send buffer always has room for it; the
		// deadline only guards against the impossible.
		nc.SetWriteDeadline(time.Now().Add(c.opts.dialTimeout))
		pre := control.Preamble{Case: c.caseID, Conn: cn.n}
		if from, ok := cn.client.RemoteAddr().(*net.TCPAddr); ok {
			pre.From = from.AddrPort().String()
		}
		if err = control.WritePreamble(nc, pre); err != nil {
			err = fmt.Errorf("write preamble: %w", err)
			nc.Close()
		}
		nc.SetWriteDeadline(time.Time{})
	} else {
		err = fmt.Errorf("dial upstream: %w", err)
	}
	if err != nil {
		cn.err = err
		cn.s2cEnded = true
		cn.state = stClosed
		cn.client.close()
		close(cn.pumpsDone)
		cn.notifyLocked()
		return
	}
	cn.up = sock{TCPConn: nc.(*net.TCPConn)}
	cn.shaped = c.opts.link.On()
	cn.state = stOpen
	cn.pumps = 2
	c.wg.Go(func() { cn.pump(toServer, newShaper(c.opts.link, cn.n, toServer)) })
	c.wg.Go(func() { cn.pump(toClient, newShaper(c.opts.link, cn.n, toClient)) })
	cn.notifyLocked()
}

func (c *Cutter) lookup(n int) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	i := n - c.opts.connBase - 1
	if i < 0 || i >= len(c.conns) {
		from := ""
		if c.opts.connBase != 0 {
			from = fmt.Sprintf(", numbered from %d", c.opts.connBase+1)
		}
		return nil, fmt.Errorf("%w %d (%d accepted so far%s)", ErrUnknownConn, n, len(c.conns), from)
	}
	return c.conns[i], nil
}

// Cut cuts connection conn with kind once at least flush server->client bytes
// of it have been written to the client socket; see the package documentation
// for what each kind does. It returns when the cut has taken effect. If ctx
// ends first, or the connection ends before flush bytes were delivered, it
// fails and leaves the connection alone. A failed Cut's Report still carries
// Conn, Kind, Flush and Delivered where they are known.
//
// Cut may be called from any goroutine; at most one cut per connection can
// wait for its flush at a time.
func (c *Cutter) Cut(ctx context.Context, conn int, kind fault.Cut, flush int64) (Report, error) {
	if kind.NeedsKernel() && c.opts.kernel == nil {
		return Report{}, ErrNeedsKernel
	}
	switch kind {
	case fault.Reset, fault.Close, fault.Blackhole, fault.Vanish:
	case fault.KillHelper:
		return Report{}, ErrNotSocketCut
	default:
		return Report{}, fmt.Errorf("cutter: invalid cut kind %v", kind)
	}
	if flush < 0 {
		return Report{}, fmt.Errorf("cutter: flush %d < 0", flush)
	}
	cn, err := c.lookup(conn)
	if err != nil {
		return Report{}, err
	}
	return cn.cut(ctx, kind, flush, &c.opts, &c.wg)
}

// Stats returns a snapshot of every connection so far, in order.
func (c *Cutter) Stats() []ConnStats {
	c.mu.Lock()
	conns := slices.Clone(c.conns)
	c.mu.Unlock()
	out := make([]ConnStats, len(conns))
	for i, cn := range conns {
		out[i] = cn.stats()
	}
	return out
}

// Close stops accepting, closes every connection's sockets (blackholed and
// draining ones too) and waits for every goroutine of the cutter to return.
// It is idempotent; later calls return the first call's result.
func (c *Cutter) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		conns := slices.Clone(c.conns)
		c.mu.Unlock()

		c.cancelDial()
		var errs []error
		if err := c.ln.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cutter: close listener: %w", err))
		}
		for _, cn := range conns {
			errs = append(errs, cn.shutdown())
		}
		c.wg.Wait()
		c.mu.Lock()
		errs = append(errs, c.acceptErr)
		c.mu.Unlock()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// WaitEnded waits until connection conn has ended (both directions done,
// an error, or a cut), and returns its stats.
func (c *Cutter) WaitEnded(ctx context.Context, conn int) (ConnStats, error) {
	cn, err := c.lookup(conn)
	if err != nil {
		return ConnStats{}, err
	}
	cn.mu.Lock()
	for cn.state != stClosed && cn.state != stCut {
		ch := cn.waitLocked()
		cn.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return cn.stats(), fmt.Errorf("cutter: connection %d did not end: %w", conn, ctx.Err())
		}
		cn.mu.Lock()
	}
	cn.mu.Unlock()
	return cn.stats(), nil
}

// WaitDelivered waits until at least n server->client bytes of connection
// conn were written to the client socket, and returns the connection's
// stats. It is the flush rule without a socket cut, for a cut that happens
// elsewhere (killing the tool's helper process).
func (c *Cutter) WaitDelivered(ctx context.Context, conn int, n int64) (ConnStats, error) {
	cn, err := c.lookup(conn)
	if err != nil {
		return ConnStats{}, err
	}
	cn.mu.Lock()
	for cn.toClient < n {
		if cn.s2cEnded || cn.state == stClosed {
			got := cn.toClient
			cn.mu.Unlock()
			return cn.stats(), fmt.Errorf("%w: connection %d ended after %d of %d server->client bytes", ErrConnClosed, conn, got, n)
		}
		ch := cn.waitLocked()
		cn.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			cn.mu.Lock()
			got := cn.toClient
			cn.mu.Unlock()
			return cn.stats(), fmt.Errorf("cutter: connection %d: %d of %d server->client bytes delivered when the wait ended: %w", conn, got, n, ctx.Err())
		}
		cn.mu.Lock()
	}
	cn.mu.Unlock()
	return cn.stats(), nil
}
