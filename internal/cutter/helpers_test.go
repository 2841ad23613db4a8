package cutter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/internal/control"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testCase = "case-1"

// safety bounds a wait that should end on an event long before it; hitting it
// is a test failure, never a way of waiting.
const safety = 10 * time.Second

// serverConn is the upstream side of a proxied connection after its preamble:
// reads first return what the bufio.Reader buffered past the preamble, then go
// straight to the socket.
type serverConn struct {
	*net.TCPConn
	pre control.Preamble

	mu   sync.Mutex
	rest []byte
}

func (s *serverConn) Read(p []byte) (int, error) {
	s.mu.Lock()
	if len(s.rest) > 0 {
		n := copy(p, s.rest)
		s.rest = s.rest[n:]
		s.mu.Unlock()
		return n, nil
	}
	s.mu.Unlock()
	return s.TCPConn.Read(p)
}

type accepted struct {
	conn *serverConn
	err  error
}

// rig is a cutter in front of a plain TCP "SSH server" that checks each
// connection's preamble and hands the connection to the test.
type rig struct {
	t     testing.TB
	cut   *Cutter
	ln    net.Listener
	conns chan accepted
	done  chan struct{}
	// kernel, when set, is where clients dial from (the kernel network's
	// tool namespace).
	kernel interface {
		Dial(ctx context.Context, d *net.Dialer, network, address string) (net.Conn, error)
	}
}

// newRig starts a rig that is closed when the test ends.
func newRig(t testing.TB, opts ...Option) *rig {
	t.Helper()
	r, err := startRig(t, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r
}

// startRig starts a rig; the caller closes it. t is only used to report
// errors of close.
func startRig(t testing.TB, opts ...Option) (*rig, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &rig{t: t, ln: ln, conns: make(chan accepted, 1024), done: make(chan struct{})}
	go r.serve()
	r.cut, err = Listen(ln.Addr().String(), testCase, opts...)
	if err != nil {
		ln.Close()
		<-r.done
		return nil, err
	}
	return r, nil
}

func (r *rig) serve() {
	defer close(r.done)
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		br := bufio.NewReader(c)
		pre, err := control.ReadPreamble(br)
		if err != nil {
			c.Close()
			r.conns <- accepted{err: err}
			continue
		}
		rest, _ := br.Peek(br.Buffered())
		r.conns <- accepted{conn: &serverConn{TCPConn: c.(*net.TCPConn), pre: pre, rest: append([]byte(nil), rest...)}}
	}
}

// close closes the cutter and the server and every server conn not taken.
func (r *rig) close() {
	if err := r.cut.Close(); err != nil {
		r.t.Errorf("cutter Close: %v", err)
	}
	r.ln.Close()
	<-r.done
	for {
		select {
		case a := <-r.conns:
			if a.conn != nil {
				a.conn.Close()
			}
		default:
			return
		}
	}
}

// accept returns the next connection the server accepted.
func (r *rig) accept() *serverConn {
	r.t.Helper()
	s, err := r.acceptErr()
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *rig) acceptErr() (*serverConn, error) {
	select {
	case a := <-r.conns:
		if a.err != nil {
			return nil, fmt.Errorf("server: %w", a.err)
		}
		return a.conn, nil
	case <-time.After(safety):
		return nil, errors.New("server accepted nothing")
	}
}

// dial connects a client through the cutter and returns both ends.
func (r *rig) dial() (*net.TCPConn, *serverConn) {
	r.t.Helper()
	var c net.Conn
	var err error
	if r.kernel != nil {
		c, err = r.kernel.Dial(context.Background(), &net.Dialer{}, "tcp", r.cut.Addr())
	} else {
		c, err = net.Dial("tcp", r.cut.Addr())
	}
	if err != nil {
		r.t.Fatal(err)
	}
	s := r.accept()
	r.t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s
}

// pattern returns n recognisable bytes, different for each seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

// readN reads exactly n bytes from c, bounded by the safety deadline.
func readN(t testing.TB, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(safety))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// readErr does one Read bounded by the safety deadline and returns its error;
// it fails if the Read returned data.
func readErr(t testing.TB, c net.Conn) error {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(safety))
	defer c.SetReadDeadline(time.Time{})
	n, err := c.Read(make([]byte, 64))
	if n > 0 {
		t.Fatalf("read %d unexpected bytes (err %v)", n, err)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: nothing happened within %v", safety)
	}
	return err
}

// connState returns the cutter's State for connection n.
func connStateOf(t testing.TB, c *Cutter, n int) string {
	t.Helper()
	for _, s := range c.Stats() {
		if s.Conn == n {
			return s.State
		}
	}
	t.Fatalf("no stats for connection %d", n)
	return ""
}

// waitEnded waits until both pumps of connection n returned, on the
// connection's own signal.
func waitEnded(t testing.TB, c *Cutter, n int) {
	t.Helper()
	c.mu.Lock()
	cn := c.conns[n-1]
	c.mu.Unlock()
	select {
	case <-cn.pumpsDone:
	case <-time.After(safety):
		t.Fatalf("connection %d did not end", n)
	}
}

// await receives from ch, failing the test if nothing comes within safety.
func await[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(safety):
		t.Fatalf("waited %v for %s", safety, what)
	}
	var zero T
	return zero
}
