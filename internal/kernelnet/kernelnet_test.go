package kernelnet_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/kernelnet"
	"golang.org/x/sys/unix"
)

// newNet gives the test a kernel network, or skips where this process may
// not make one (fails instead under SSHRIG_REQUIRE_NETNS=1, as in CI).
func newNet(t *testing.T) *kernelnet.Net {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := kernelnet.New(ctx)
	if errors.Is(err, kernelnet.ErrNeedsPrivilege) {
		if os.Getenv("SSHRIG_REQUIRE_NETNS") == "1" {
			t.Fatalf("SSHRIG_REQUIRE_NETNS=1 but: %v", err)
		}
		t.Skipf("no kernel network here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return n
}

// newListening is newNet with a listener in the server's namespace, closed
// when the test ends.
func newListening(t *testing.T) (*kernelnet.Net, *net.TCPListener) {
	t.Helper()
	n := newNet(t)
	ln, err := n.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return n, ln
}

// pair is one connection across the veth: the tool's end and the server
// side's accepted end.
type pair struct {
	client, server *net.TCPConn
}

func connect(t *testing.T, n *kernelnet.Net, ln *net.TCPListener, d *net.Dialer) pair {
	t.Helper()
	accepted := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	c, err := n.Dial(context.Background(), d, "tcp4", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial across the veth: %v", err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return pair{c.(*net.TCPConn), s}
}

func ends(p pair) (client, listener netip.AddrPort) {
	return p.client.LocalAddr().(*net.TCPAddr).AddrPort(), p.server.LocalAddr().(*net.TCPAddr).AddrPort()
}

func abortOf(c *net.TCPConn) func() error {
	return func() error {
		if err := c.SetLinger(0); err != nil {
			return err
		}
		return c.Close()
	}
}

func TestAcrossTheVeth(t *testing.T) {
	n, ln := newListening(t)
	p := connect(t, n, ln, &net.Dialer{})
	client, listener := ends(p)
	if client.Addr() != kernelnet.ToolAddr || listener.Addr() != kernelnet.ServerAddr {
		t.Fatalf("ends %s -> %s, want %s -> %s", client, listener, kernelnet.ToolAddr, kernelnet.ServerAddr)
	}
	if _, err := p.client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(p.server, b); err != nil || b[0] != 'x' {
		t.Fatalf("read %q, %v", b, err)
	}
	// The server's address exists only inside the pair: from the rig's own
	// namespace nothing reaches it.
	d := net.Dialer{Timeout: 2 * time.Second}
	if c, err := d.Dial("tcp4", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the server's namespace is reachable from the host's")
	}
}

// A blackhole drops the connection's packets: the tool's kernel
// retransmits what it wrote and gives up at TCP_USER_TIMEOUT, which never
// happens behind a proxy that acknowledges everything.
func TestBlackholeTimesOutInTheToolsKernel(t *testing.T) {
	n, ln := newListening(t)
	p := connect(t, n, ln, &net.Dialer{})
	rc, _ := p.client.SyscallConn()
	rc.Control(func(fd uintptr) {
		if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 300); err != nil {
			t.Fatal(err)
		}
	})
	client, listener := ends(p)
	remove, err := n.Cut(fault.Blackhole, client, listener, abortOf(p.server))
	if err != nil {
		t.Fatal(err)
	}
	if remove == nil {
		t.Fatal("a blackhole must stay until the case ends")
	}
	if _, err := p.client.Write([]byte("into the void")); err != nil {
		t.Fatal(err)
	}
	p.client.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = p.client.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("read after blackhole: %v, want ETIMEDOUT from the tool's kernel", err)
	}
	// The server side's socket never heard of any of it.
	if got := tcpState(t, p.server); got != unix.BPF_TCP_ESTABLISHED {
		t.Fatalf("server side state %d, want established", got)
	}
	names, _ := n.Tables()
	if len(names) != 1 {
		t.Fatalf("tables %v, want one", names)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if names, _ := n.Tables(); len(names) != 0 {
		t.Fatalf("tables left after remove: %v", names)
	}
}

func TestResetIsAnsweredByTheKernel(t *testing.T) {
	n, ln := newListening(t)
	p := connect(t, n, ln, &net.Dialer{})
	client, listener := ends(p)
	remove, err := n.Cut(fault.Reset, client, listener, abortOf(p.server))
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	p.client.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := p.client.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after reset: %v, want ECONNRESET", err)
	}
}

// Vanish removes the server side's socket without a packet: the tool's
// socket stays established until it sends, and its next segment meets an
// RST.
func TestVanishIsSilentUntilTheToolSends(t *testing.T) {
	n, ln := newListening(t)
	p := connect(t, n, ln, &net.Dialer{})
	sentinel := connect(t, n, ln, &net.Dialer{})
	client, listener := ends(p)
	remove, err := n.Cut(fault.Vanish, client, listener, abortOf(p.server))
	if err != nil {
		t.Fatal(err)
	}
	if remove != nil {
		t.Fatal("vanish must leave nothing installed")
	}
	if names, _ := n.Tables(); len(names) != 0 {
		t.Fatalf("tables left after vanish: %v", names)
	}
	// A byte sent over the same veth after the abort arrives after
	// anything the abort could have sent: once it is here, an RST that
	// escaped would have been processed too.
	if _, err := sentinel.server.Write([]byte("s")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(sentinel.client, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if got := tcpState(t, p.client); got != unix.BPF_TCP_ESTABLISHED {
		t.Fatalf("tool's socket state %d after vanish, want still established (no packet)", got)
	}
	if _, err := p.client.Write([]byte("hello?")); err != nil {
		t.Fatal(err)
	}
	p.client.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := p.client.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after the tool sent: %v, want ECONNRESET", err)
	}
}

func TestCutRefusesOtherKinds(t *testing.T) {
	n := newNet(t)
	for _, k := range []fault.Cut{fault.Close, fault.KillHelper, fault.Stall} {
		if _, err := n.Cut(k, netip.MustParseAddrPort("169.254.83.1:1"), netip.MustParseAddrPort("169.254.83.2:2"), nil); err == nil {
			t.Errorf("%v: no error", k)
		}
	}
}

func tcpState(t *testing.T, c *net.TCPConn) uint8 {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var gerr error
	rc.Control(func(fd uintptr) { info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	return info.State
}
