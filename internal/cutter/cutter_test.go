package cutter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/nettest"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// A connection through the cutter, without a cut, is a proper net.Conn from
// end to end, preamble stripped.
func TestConnNettest(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		r, err := startRig(t)
		if err != nil {
			return nil, nil, nil, err
		}
		c1, err = net.Dial("tcp", r.cut.Addr())
		if err != nil {
			r.close()
			return nil, nil, nil, err
		}
		s, err := r.acceptErr()
		if err != nil {
			c1.Close()
			r.close()
			return nil, nil, nil, err
		}
		stop = func() {
			c1.Close()
			s.Close()
			r.close()
		}
		return c1, s, stop, nil
	})
}

// TestFirstConn: a second cutter of a case numbers its connections from
// WithFirstConn on, and Cut finds them by those numbers.
func TestFirstConn(t *testing.T) {
	r := newRig(t, WithFirstConn(1001))
	c, s := r.dial()
	if s.pre.Conn != 1001 {
		t.Fatalf("first connection numbered %d, want 1001", s.pre.Conn)
	}
	if _, err := r.cut.Cut(context.Background(), 1, fault.Reset, 0); !errors.Is(err, ErrUnknownConn) {
		t.Errorf("Cut(1) = %v, want ErrUnknownConn", err)
	}
	if _, err := r.cut.Cut(context.Background(), 1001, fault.Reset, 0); err != nil {
		t.Fatalf("Cut(1001): %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("tool read after the reset = %v, want ECONNRESET", err)
	}
}

func TestPreambleAndNumbering(t *testing.T) {
	var mu sync.Mutex
	var seen []int
	r := newRig(t, WithOnAccept(func(n int) {
		mu.Lock()
		seen = append(seen, n)
		mu.Unlock()
	}))
	for i := 1; i <= 3; i++ {
		c, s := r.dial()
		// From names the tool's end, so a jump host's tunnel can be told
		// from the connection it opened to the target.
		want := control.Preamble{Case: testCase, Conn: i, From: c.LocalAddr().(*net.TCPAddr).AddrPort().String()}
		if s.pre != want {
			t.Errorf("preamble %+v, want %+v", s.pre, want)
		}
	}
	for _, st := range r.cut.Stats() {
		if st.Accepted.IsZero() || st.State != "open" {
			t.Errorf("stats %+v, want an accepted open connection", st)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// OnAccept runs before the upstream dial, so it has run for a
	// connection by the time the server has seen its preamble.
	if !slices.Equal(seen, []int{1, 2, 3}) {
		t.Errorf("OnAccept saw %v, want [1 2 3]", seen)
	}
}

func TestListenErrors(t *testing.T) {
	for _, tc := range []struct {
		name, upstream, caseID, want string
		opts                         []Option
	}{
		{"empty case", "127.0.0.1:22", "", control.ValidID("").Error(), nil},
		{"bad case", "127.0.0.1:22", "a b", control.ValidID("a b").Error(), nil},
		{"bad upstream", "localhost", testCase, "missing port", nil},
		{"bad timeout", "127.0.0.1:22", testCase, "dial timeout", []Option{WithDialTimeout(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Listen(tc.upstream, tc.caseID, tc.opts...)
			if err == nil {
				c.Close()
				t.Fatal("Listen succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// Without a cut, EOF in one direction is passed on as a FIN while the other
// direction keeps going, and the connection closes once both ended.
func TestHalfClose(t *testing.T) {
	r := newRig(t)
	client, server := r.dial()
	if _, err := client.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if err := client.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, server, 7); string(got) != "request" {
		t.Fatalf("server got %q", got)
	}
	if err := readErr(t, server); err != io.EOF {
		t.Fatalf("server read after client's FIN: %v, want EOF", err)
	}
	if _, err := server.Write([]byte("reply")); err != nil {
		t.Fatalf("server write after client's FIN: %v", err)
	}
	if got := readN(t, client, 5); string(got) != "reply" {
		t.Fatalf("client got %q", got)
	}
	if err := server.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := readErr(t, client); err != io.EOF {
		t.Fatalf("client read after server's FIN: %v, want EOF", err)
	}
	waitEnded(t, r.cut, 1)
	st := r.cut.Stats()[0]
	if st.State != "closed" || st.ToServer != 7 || st.ToClient != 5 || st.Err != "" {
		t.Errorf("stats %+v, want closed with 7 and 5 bytes and no error", st)
	}
}

// cutAtFlush makes one connection (prepare, when set, sets the client's
// socket up first), has the server write size bytes, cuts with flush =
// size, checks the report, and checks that the client then reads every
// byte before the cut point.
func cutAtFlush(t testing.TB, r *rig, kind fault.Cut, size int, prepare func(*net.TCPConn)) (*net.TCPConn, *serverConn, int) {
	t.Helper()
	client, server := r.dial()
	if prepare != nil {
		prepare(client)
	}
	n := server.pre.Conn
	want := pattern(size, byte(n))
	if _, err := server.Write(want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	rep, err := r.cut.Cut(ctx, n, kind, int64(size))
	if err != nil {
		t.Fatalf("Cut: %v", err)
	}
	if rep.Conn != n || rep.Kind != kind || rep.Flush != int64(size) || rep.Delivered != int64(size) || rep.At.IsZero() {
		t.Errorf("report %+v, want conn %d, %v, flush = delivered = %d", rep, n, kind, size)
	}
	if runtime.GOOS == "linux" && rep.Unsent != 0 {
		t.Errorf("report %+v: %d bytes not yet sent to the client at the cut", rep, rep.Unsent)
	}
	// The client reads only now, after the cut: every byte before the cut
	// point must be there, even after an RST.
	if got := readN(t, client, size); !bytes.Equal(got, want) {
		t.Fatalf("client got different bytes before the cut")
	}
	return client, server, n
}

// cutAndCheck cuts at the flush (cutAtFlush) and checks what each side
// sees afterwards.
func cutAndCheck(t testing.TB, r *rig, kind fault.Cut, size int) {
	t.Helper()
	client, server, n := cutAtFlush(t, r, kind, size, nil)
	switch kind {
	case fault.Reset:
		if err := readErr(t, client); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("client read after reset: %v, want ECONNRESET", err)
		}
		if err := readErr(t, server); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("server read after reset: %v, want ECONNRESET", err)
		}
		if st := connStateOf(t, r.cut, n); st != "cut:reset" {
			t.Errorf("state %q", st)
		}
	case fault.Close:
		if err := readErr(t, client); err != io.EOF {
			t.Errorf("client read after close: %v, want EOF", err)
		}
		if err := readErr(t, server); err != io.EOF {
			t.Errorf("server read after close: %v, want EOF", err)
		}
		// The cutter drains rather than closes, so bytes the peers send
		// after the FIN do not provoke an RST.
		if _, err := client.Write([]byte("late")); err != nil {
			t.Errorf("client write after close: %v", err)
		}
		if _, err := server.Write([]byte("late")); err != nil {
			t.Errorf("server write after close: %v", err)
		}
		// Had the cutter answered a late write with an RST, a read would
		// still return EOF (a FIN was received first) but the next write
		// would fail with EPIPE.
		if _, err := client.Write([]byte("later")); err != nil {
			t.Errorf("client's second write after close: %v (an RST came back)", err)
		}
		if _, err := server.Write([]byte("later")); err != nil {
			t.Errorf("server's second write after close: %v (an RST came back)", err)
		}
		if err := readErr(t, client); err != io.EOF {
			t.Errorf("client read after its late writes: %v, want EOF", err)
		}
		if err := readErr(t, server); err != io.EOF {
			t.Errorf("server read after its late writes: %v, want EOF", err)
		}
		if st := connStateOf(t, r.cut, n); st != "cut:close" {
			t.Errorf("state %q", st)
		}
	case fault.Blackhole:
		// Both sockets stay open: writes succeed into kernel buffers, but
		// nothing comes through in either direction.
		if _, err := server.Write([]byte("after")); err != nil {
			t.Errorf("server write after blackhole: %v", err)
		}
		if _, err := client.Write([]byte("after")); err != nil {
			t.Errorf("client write after blackhole: %v", err)
		}
		for _, c := range []net.Conn{client, server} {
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if n, err := c.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("read through blackhole: %d bytes, %v; want a timeout", n, err)
			}
		}
		if st := connStateOf(t, r.cut, n); st != "cut:blackhole" {
			t.Errorf("state %q", st)
		}
		if err := r.cut.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, c := range []net.Conn{client, server} {
			if err := readErr(t, c); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("read after the cutter's Close: %v, want EOF or ECONNRESET", err)
			}
		}
	}
}

func TestCut(t *testing.T) {
	for _, kind := range fault.TransportCuts() {
		for _, size := range []int{1, 4096, 64 << 10} {
			t.Run(fmt.Sprintf("%v/%d", kind, size), func(t *testing.T) {
				cutAndCheck(t, newRig(t), kind, size)
			})
		}
	}
}

// The reset and close cuts are deterministic: same result every time.
func TestCutRepeat(t *testing.T) {
	const runs = 200
	for _, kind := range []fault.Cut{fault.Reset, fault.Close} {
		t.Run(kind.String(), func(t *testing.T) {
			r := newRig(t)
			for i := 0; i < runs && !t.Failed(); i++ {
				cutAndCheck(t, r, kind, 1500)
			}
			if got := len(r.cut.Stats()); got != runs && !t.Failed() {
				t.Errorf("%d connections, want %d", got, runs)
			}
		})
	}
}

// A cut requested before the server wrote its bytes waits for them, and
// lands exactly at the flush even though the server writes past it.
func TestCutWaitsForFlush(t *testing.T) {
	for _, kind := range []fault.Cut{fault.Reset, fault.Close} {
		t.Run(kind.String(), func(t *testing.T) {
			waiting := make(chan struct{}, 1)
			r := newRig(t, withFlushWaitHook(func(int, int64, int64) {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}))
			client, server := r.dial()
			const flush = 3000
			all := pattern(2*flush, 9)

			type result struct {
				rep Report
				err error
			}
			done := make(chan result, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), safety)
				defer cancel()
				rep, err := r.cut.Cut(ctx, 1, kind, flush)
				done <- result{rep, err}
			}()
			await(t, waiting, "the cut to wait")
			select {
			case res := <-done:
				t.Fatalf("Cut returned before any byte was written: %+v", res)
			default:
			}
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				// Small pieces, so the flush falls inside a chunk the
				// cutter read; errors after the cut are expected.
				for p := all; len(p) > 0; p = p[min(len(p), 700):] {
					if _, err := server.Write(p[:min(len(p), 700)]); err != nil {
						return
					}
				}
			}()
			res := await(t, done, "Cut to return")
			await(t, wrote, "the server's writes")
			if res.err != nil {
				t.Fatalf("Cut: %v", res.err)
			}
			if res.rep.Delivered != flush {
				t.Errorf("delivered %d, want exactly the flush %d (bytes past it are held back)", res.rep.Delivered, flush)
			}
			if res.rep.FlushWait <= 0 {
				t.Errorf("flush wait %v", res.rep.FlushWait)
			}
			if got := readN(t, client, flush); !bytes.Equal(got, all[:flush]) {
				t.Fatal("client got different bytes before the cut")
			}
			err := readErr(t, client)
			switch kind {
			case fault.Reset:
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("client read after the cut: %v, want ECONNRESET", err)
				}
			case fault.Close:
				if err != io.EOF {
					t.Errorf("client read after the cut: %v, want EOF", err)
				}
			}
		})
	}
}

func roundtrip(t testing.TB, client net.Conn, server net.Conn, msg string) {
	t.Helper()
	if _, err := client.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, server, len(msg)); string(got) != msg {
		t.Fatalf("server got %q, want %q", got, msg)
	}
	if _, err := server.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, client, len(msg)); string(got) != msg {
		t.Fatalf("client got %q, want %q", got, msg)
	}
}

// A cut affects only its connection; the cutter keeps accepting.
func TestCutIsolation(t *testing.T) {
	for _, kind := range fault.TransportCuts() {
		t.Run(kind.String(), func(t *testing.T) {
			r := newRig(t)
			c1, s1 := r.dial()
			c2, s2 := r.dial()
			roundtrip(t, c1, s1, "one")
			roundtrip(t, c2, s2, "two")
			ctx, cancel := context.WithTimeout(context.Background(), safety)
			defer cancel()
			if _, err := r.cut.Cut(ctx, 2, kind, 3); err != nil {
				t.Fatal(err)
			}
			roundtrip(t, c1, s1, "still one")
			c3, s3 := r.dial()
			if s3.pre.Conn != 3 {
				t.Errorf("new connection numbered %d, want 3", s3.pre.Conn)
			}
			roundtrip(t, c3, s3, "three")
			roundtrip(t, c1, s1, "one again")
			var states []string
			for _, st := range r.cut.Stats() {
				states = append(states, st.State)
			}
			if want := []string{"open", "cut:" + kind.String(), "open"}; !slices.Equal(states, want) {
				t.Errorf("states %v, want %v", states, want)
			}
		})
	}
}

func TestCutErrors(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		name string
		// run does the scenario against a rig with one connection (numbered
		// 1) whose server side has not written anything, and returns Cut's
		// error.
		run  func(t *testing.T, r *rig, client net.Conn, server *serverConn, waiting <-chan struct{}) error
		is   error
		want string // substring of the message
	}{
		{
			name: "unknown conn 0",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, _ <-chan struct{}) error {
				_, err := r.cut.Cut(bg, 0, fault.Reset, 0)
				return err
			},
			is: ErrUnknownConn, want: "connection 0 (1 accepted so far)",
		},
		{
			name: "unknown conn 7",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, _ <-chan struct{}) error {
				_, err := r.cut.Cut(bg, 7, fault.Reset, 0)
				return err
			},
			is: ErrUnknownConn, want: "connection 7",
		},
		{
			name: "kill-helper",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, _ <-chan struct{}) error {
				_, err := r.cut.Cut(bg, 1, fault.KillHelper, 0)
				return err
			},
			is: ErrNotSocketCut, want: "cutter: kill-helper is not a socket cut",
		},
		{
			name: "invalid kind",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, _ <-chan struct{}) error {
				_, err := r.cut.Cut(bg, 1, fault.Cut(0), 0)
				return err
			},
			want: "invalid cut kind",
		},
		{
			name: "negative flush",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, _ <-chan struct{}) error {
				_, err := r.cut.Cut(bg, 1, fault.Reset, -1)
				return err
			},
			want: "flush -1 < 0",
		},
		{
			name: "ctx timeout before flush",
			run: func(t *testing.T, r *rig, client net.Conn, server *serverConn, _ <-chan struct{}) error {
				server.Write(pattern(10, 1))
				readN(t, client, 10) // delivered, for sure
				ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
				defer cancel()
				_, err := r.cut.Cut(ctx, 1, fault.Reset, 100)
				// The connection is untouched and no longer held back.
				server.Write(pattern(190, 2))
				readN(t, client, 190)
				roundtrip(t, client, server, "alive")
				if st := connStateOf(t, r.cut, 1); st != "open" {
					t.Errorf("state %q after a failed cut", st)
				}
				return err
			},
			is: context.DeadlineExceeded, want: "10 of 100 server->client bytes delivered",
		},
		{
			name: "already cut",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, _ <-chan struct{}) error {
				if _, err := r.cut.Cut(bg, 1, fault.Blackhole, 0); err != nil {
					t.Fatal(err)
				}
				_, err := r.cut.Cut(bg, 1, fault.Reset, 0)
				return err
			},
			is: ErrAlreadyCut, want: "connection 1 is already cut:blackhole",
		},
		{
			name: "already closed",
			run: func(t *testing.T, r *rig, client net.Conn, server *serverConn, _ <-chan struct{}) error {
				client.Close()
				server.Close()
				waitEnded(t, r.cut, 1)
				_, err := r.cut.Cut(bg, 1, fault.Reset, 0)
				return err
			},
			is: ErrConnClosed, want: "already closed",
		},
		{
			name: "upstream ends before flush",
			run: func(t *testing.T, r *rig, client net.Conn, server *serverConn, waiting <-chan struct{}) error {
				server.Write(pattern(10, 1))
				readN(t, client, 10)
				errc := make(chan error, 1)
				go func() {
					_, err := r.cut.Cut(bg, 1, fault.Reset, 100)
					errc <- err
				}()
				await(t, waiting, "the cut to wait")
				server.Close()
				return await(t, errc, "Cut to return")
			},
			is: ErrConnClosed, want: "10 of 100",
		},
		{
			name: "second cut while one waits",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, waiting <-chan struct{}) error {
				ctx, cancel := context.WithCancel(bg)
				errc := make(chan error, 1)
				go func() {
					_, err := r.cut.Cut(ctx, 1, fault.Reset, 100)
					errc <- err
				}()
				await(t, waiting, "the cut to wait")
				_, err := r.cut.Cut(bg, 1, fault.Close, 0)
				cancel()
				if first := await(t, errc, "the first Cut"); !errors.Is(first, context.Canceled) {
					t.Errorf("first cut: %v, want canceled", first)
				}
				return err
			},
			is: ErrAlreadyCut, want: "waiting for its flush of 100 bytes",
		},
		{
			name: "cutter closed",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, _ <-chan struct{}) error {
				r.cut.Close()
				_, err := r.cut.Cut(bg, 1, fault.Reset, 0)
				return err
			},
			is: ErrClosed,
		},
		{
			name: "cutter closed while waiting",
			run: func(t *testing.T, r *rig, _ net.Conn, _ *serverConn, waiting <-chan struct{}) error {
				errc := make(chan error, 1)
				go func() {
					_, err := r.cut.Cut(bg, 1, fault.Reset, 100)
					errc <- err
				}()
				await(t, waiting, "the cut to wait")
				r.cut.Close()
				return await(t, errc, "Cut to return")
			},
			is: ErrClosed, want: "0 of 100",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			waiting := make(chan struct{}, 1)
			r := newRig(t, withFlushWaitHook(func(int, int64, int64) {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}))
			client, server := r.dial()
			err := tc.run(t, r, client, server, waiting)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %q", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// A connection whose upstream dial fails is closed and says why.
func TestUpstreamRefused(t *testing.T) {
	ref, err := Refusing()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	c, err := Listen(ref.Addr(), testCase)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client, err := net.Dial("tcp", c.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := readErr(t, client); err != io.EOF {
		t.Errorf("client read: %v, want EOF", err)
	}
	st := c.Stats()
	if len(st) != 1 || st[0].State != "closed" || !strings.Contains(st[0].Err, "connection refused") {
		t.Errorf("stats %+v, want one closed connection refused upstream", st)
	}
	if _, err := c.Cut(context.Background(), 1, fault.Reset, 0); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Cut: %v, want ErrConnClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// Close closes every connection whatever its state and leaves no goroutine.
func TestCloseLeavesNothing(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	waiting := make(chan struct{}, 1)
	r, err := startRig(t, withFlushWaitHook(func(int, int64, int64) {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	dial := func() (net.Conn, *serverConn) {
		c, s := r.dial()
		conns = append(conns, c, s)
		return c, s
	}
	bg := context.Background()

	dial()           // 1: idle
	c2, s2 := dial() // 2: a pump blocked writing to a client that does not read
	_ = c2
	flood := make(chan struct{})
	go func() {
		defer close(flood)
		big := make([]byte, 1<<20)
		for {
			if _, err := s2.Write(big); err != nil {
				return
			}
		}
	}()
	dial() // 3: blackholed
	if _, err := r.cut.Cut(bg, 3, fault.Blackhole, 0); err != nil {
		t.Fatal(err)
	}
	dial() // 4: close cut, draining, peers never close
	if _, err := r.cut.Cut(bg, 4, fault.Close, 0); err != nil {
		t.Fatal(err)
	}
	dial() // 5: a cut waiting for its flush
	cutErr := make(chan error, 1)
	go func() {
		_, err := r.cut.Cut(bg, 5, fault.Reset, 1)
		cutErr <- err
	}()
	await(t, waiting, "the cut to wait")

	if err := r.cut.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := r.cut.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := await(t, cutErr, "the waiting Cut"); !errors.Is(err, ErrClosed) {
		t.Errorf("waiting Cut: %v, want ErrClosed", err)
	}
	await(t, flood, "the flood to end") // the cutter's Close ended the flood with an error
	r.close()
	for _, c := range conns {
		c.Close()
	}
	goleak.VerifyNone(t, ignore)

	want := []string{"closed", "closed", "cut:blackhole", "cut:close", "closed"}
	var states []string
	for _, st := range r.cut.Stats() {
		states = append(states, st.State)
	}
	if !slices.Equal(states, want) {
		t.Errorf("states %v, want %v", states, want)
	}
}

func TestRefusing(t *testing.T) {
	ref, err := Refusing()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", ref.Addr())
		if err == nil {
			c.Close()
			t.Fatal("dial succeeded")
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial: %v, want ECONNREFUSED", err)
		}
	}
	// Held: nobody else gets the port, not even with SO_REUSEADDR (which
	// Go's Listen sets).
	if ln, err := net.Listen("tcp4", ref.Addr()); err == nil {
		ln.Close()
		t.Fatal("could listen on the refusing port while it is held")
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("listen while held: %v, want EADDRINUSE", err)
	}
	if err := ref.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ref.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ln, err := net.Listen("tcp4", ref.Addr())
	if err != nil {
		t.Fatalf("port not released: %v", err)
	}
	ln.Close()
}

// Connections accepted while new ones are held reach the server only after
// OpenNew; Close while they wait ends them.
func TestHoldNew(t *testing.T) {
	accepted := make(chan int, 4)
	r := newRig(t, WithOnAccept(func(n int) { accepted <- n }))
	r.cut.HoldNew()
	client, err := net.Dial("tcp4", r.cut.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if n := <-accepted; n != 1 {
		t.Fatalf("accepted connection %d, want 1", n)
	}
	// The negative check needs a bound: the upstream dial takes well under
	// a millisecond on loopback when nothing holds it.
	select {
	case a := <-r.conns:
		t.Fatalf("a held connection reached the server: %+v", a)
	case <-time.After(200 * time.Millisecond):
	}
	r.cut.OpenNew()
	s := r.accept()
	defer s.Close()
	if s.pre.Conn != 1 {
		t.Fatalf("preamble %+v, want connection 1", s.pre)
	}
	roundtrip(t, client, s, "after the gate opened")

	// Held again: Close must not wait for a gate nobody opens.
	r.cut.HoldNew()
	c2, err := net.Dial("tcp4", r.cut.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	<-accepted
	if err := r.cut.Close(); err != nil {
		t.Fatalf("Close with a held connection: %v", err)
	}
}

// A tool that resets its end after the pumps stopped but before a close
// cut's FIN leaves the cut nothing to close: the cut fails as if the tool
// had gone before it (ErrConnClosed), not as a failure of the rig's.
func TestCloseCutAfterTheToolReset(t *testing.T) {
	var client *net.TCPConn
	r := newRig(t, withBeforeSocketAction(func(_ int, own *net.TCPConn) {
		client.SetLinger(0)
		client.Close()
		// Wait for the RST to reach the cutter's end: a read reports it.
		own.SetReadDeadline(time.Time{})
		if _, err := own.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("the cutter's end read %v, want ECONNRESET", err)
		}
	}))
	var server *serverConn
	client, server = r.dial()
	if _, err := server.Write([]byte("status")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	_, err := r.cut.Cut(ctx, server.pre.Conn, fault.Close, 6)
	if !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Cut: %v, want ErrConnClosed", err)
	}
}
