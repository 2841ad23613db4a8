package cutter

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// A server that crashes resets its connections: the tool meets the RST,
// not a FIN, and still gets every byte the server had sent before it.
func TestServerResetReachesTheTool(t *testing.T) {
	r := newRig(t)
	client, s := r.dial()
	msg := pattern(5000, 3)
	if _, err := s.Write(msg); err != nil {
		t.Fatal(err)
	}
	readN(t, client, len(msg))
	s.SetLinger(0)
	s.Close()
	if err := readErr(t, client); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the tool read %v after the server's reset, want ECONNRESET", err)
	}
}

// A host that went down says nothing: its connections go silent both ways,
// and a new connection waits. Once it is back, the tool's next segment on
// an old connection meets an RST, and the waiting connection reaches the
// server.
func TestDownThenUp(t *testing.T) {
	r := newRig(t)
	client, s := r.dial()
	roundtrip(t, client, s, "before the host went down")
	if got := r.cut.Down(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("Down silenced %v, want [1]", got)
	}
	if st := connStateOf(t, r.cut, 1); st != "cut:reboot" {
		t.Fatalf("connection 1 is %q after Down, want cut:reboot", st)
	}
	// What the dead host's server does never reaches the tool, and the
	// tool's bytes never reach it. The negative checks need a bound.
	s.Write([]byte("from a host that is down"))
	s.Close()
	client.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := client.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the tool read %d bytes, %v, from a host that is down", n, err)
	}
	client.SetReadDeadline(time.Time{})
	late, err := net.Dial("tcp4", r.cut.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	select {
	case a := <-r.conns:
		t.Fatalf("a connection reached a host that is down: %+v", a)
	case <-time.After(200 * time.Millisecond):
	}

	r.cut.Up()
	back := r.accept()
	defer back.Close()
	if back.pre.Conn != 2 {
		t.Fatalf("after Up the server got connection %d, want the waiting 2", back.pre.Conn)
	}
	roundtrip(t, late, back, "after the host came back")
	if _, err := client.Write([]byte("keepalive")); err != nil {
		t.Fatal(err)
	}
	if err := readErr(t, client); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Fatalf("the tool's next segment met %v, want an RST", err)
	} else if errors.Is(err, io.EOF) {
		t.Fatal("the tool's next segment met a FIN, want an RST")
	}
}

// A host whose server came back listening elsewhere (a restarted
// container's ports are published anew): a connection that waited while it
// was down reaches the new address once the cutter's upstream moved there.
func TestUpAtANewUpstream(t *testing.T) {
	r := newRig(t)
	client, s := r.dial()
	roundtrip(t, client, s, "before the host went down")
	r.cut.Down()
	late, err := net.Dial("tcp4", r.cut.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	moved, err := startRig(t)
	if err != nil {
		t.Fatal(err)
	}
	defer moved.close()
	if err := r.cut.SetUpstream(moved.ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	r.cut.Up()
	back := moved.accept()
	defer back.Close()
	if back.pre.Conn != 2 {
		t.Fatalf("the new upstream got connection %d, want the waiting 2", back.pre.Conn)
	}
	roundtrip(t, late, back, "after the host came back elsewhere")
	if err := r.cut.SetUpstream("no port"); err == nil {
		t.Fatal("SetUpstream took an address without a port")
	}
}
