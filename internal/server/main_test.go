package server_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/internal/procs"
)

// TestMain fails the package if a test left a goroutine or a child process
// (a command, a client) behind.
func TestMain(m *testing.M) {
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
	}
	os.Exit(code)
}
