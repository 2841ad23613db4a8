package sockowner

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000000000000000000001000000:0016": "[::1]:22",
	} {
		got, err := parseAddr(in)
		if err != nil || got.String() != want {
			t.Errorf("parseAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
}

// TestFindsAndKillsOwner: a child process holding a connected socket is found
// by the socket's two ends and killed; the rig's own process is found too.
func TestFindsAndKillsOwner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The child inherits a connected socket as fd 3 and blocks reading stdin.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f, _ := c.(*net.TCPConn).File()
	local := c.LocalAddr().(*net.TCPAddr).AddrPort()
	remote := c.RemoteAddr().(*net.TCPAddr).AddrPort()
	c.Close()
	cmd := exec.Command("sh", "-c", "read x")
	cmd.ExtraFiles = []*os.File{f}
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	ino, err := Inode(local, remote)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := Owners(ino)
	if err != nil || len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("owners %v, %v; want [%d]", pids, err, cmd.Process.Pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Kill(ctx, pids); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("child exited cleanly; want killed")
	}
	// With its only owner dead, the kernel closed the socket: the peer sees EOF.
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := srv.Read(make([]byte, 1)); err == nil {
		t.Fatal("peer read succeeded after the owner died")
	}
	if _, err := Inode(netip.MustParseAddrPort("127.0.0.1:1"), remote); err == nil {
		t.Fatal("found a socket that does not exist")
	}
}

// A stopped process (a wedged helper) is stopped when Signal returns, and
// still there: Kill then ends it.
func TestStopThenKill(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Signal(ctx, []int{cmd.Process.Pid}, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	if st := string(b); !strings.Contains(st, ") T ") && !strings.Contains(st, ") t ") {
		t.Fatalf("after SIGSTOP the process is not stopped: %s", st)
	}
	if err := Kill(ctx, []int{cmd.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("the stopped process did not die of SIGKILL")
	}
}
