package server_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/internal/procs"
)

// TestMain fails the package if a test left a goroutine, a child process (a
// command, a client) or an open file behind: a pseudo-terminal (a PTY
// session's master) or a regular file (an SFTP handle, a gate FIFO, a
// ledger) the server did not close.
func TestMain(m *testing.M) {
	before := openFiles()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
		if kids := procs.Children(os.Getpid()); len(kids) != 0 {
			fmt.Fprintln(os.Stderr, "child processes left behind:", kids)
			code = 1
		}
		var left []string
		for fd, target := range openFiles() {
			if before[fd] != target && heldByServer(target) {
				left = append(left, fd+" -> "+target)
			}
		}
		if len(left) != 0 {
			fmt.Fprintln(os.Stderr, "files left open:", strings.Join(left, ", "))
			code = 1
		}
	}
	os.Exit(code)
}

// openFiles maps each of the process's open file descriptors to what it
// refers to.
func openFiles() map[string]string {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			out[e.Name()] = target
		}
	}
	return out
}

// heldByServer says whether an open file is one the server opens for a
// case: anything with a path, a terminal (/dev/ptmx, /dev/pts/N) or a file
// (sockets, pipes and the runtime's anonymous descriptors, named "socket:[…]"
// and the like, are left to goleak and the child-process check).
func heldByServer(target string) bool { return strings.HasPrefix(target, "/") }
