package cutter

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/sshrig/sshrig/fault"
)

// adoptOne accepts one client connection on a front listener of its own and
// returns the client's end and the front's.
func adoptOne(t *testing.T) (client, front *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); f.Close() })
	return c.(*net.TCPConn), f
}

// An adopted connection is numbered after those the cutter accepted, carries
// the case's preamble, forwards both ways and is cut like any other.
func TestAdoptProxiesAndCuts(t *testing.T) {
	r := newRig(t)
	r.dial() // connection 1, accepted by the cutter itself
	client, front := adoptOne(t)
	if err := r.cut.Adopt(front); err != nil {
		t.Fatal(err)
	}
	s := r.accept()
	t.Cleanup(func() { s.Close() })
	if s.pre.Case != testCase || s.pre.Conn != 2 {
		t.Fatalf("preamble %+v, want case %s conn 2", s.pre, testCase)
	}
	client.Write(pattern(100, 1))
	if got := readN(t, s, 100); string(got) != string(pattern(100, 1)) {
		t.Fatal("client->server bytes differ")
	}
	s.Write(pattern(50, 2))
	if got := readN(t, client, 50); string(got) != string(pattern(50, 2)) {
		t.Fatal("server->client bytes differ")
	}
	if _, err := r.cut.Cut(context.Background(), 2, fault.Reset, 50); err != nil {
		t.Fatal(err)
	}
	if err := readErr(t, client); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("client read after a reset: %v, want ECONNRESET", err)
	}
}

// A closed cutter adopts nothing: the connection is closed and Adopt says so.
func TestAdoptAfterClose(t *testing.T) {
	r := newRig(t)
	r.cut.Close()
	client, front := adoptOne(t)
	if err := r.cut.Adopt(front); !errors.Is(err, ErrClosed) {
		t.Fatalf("Adopt after Close: %v, want ErrClosed", err)
	}
	if err := readErr(t, client); err == nil {
		t.Error("the adopted connection is still open")
	}
}
