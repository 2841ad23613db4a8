package main

import (
	"testing"

	"github.com/sshrig/sshrig/internal/testpeer"
)

// TestTerminalHungUpAtStartGate: with a terminal (ssh -tt), a cut at exec
// hangs the terminal up as the command starts; a command killed while it
// waits at its start gate has written its start marker, and the server must
// say so too. Before the server read the gate's last lines after an exit,
// 29 of 80 of these case runs were inconclusive (the ledger said started,
// the server not_started).
func TestTerminalHungUpAtStartGate(t *testing.T) {
	testpeer.Need(t, "ssh")
	t.Parallel()
	code, _, stderr, rep := sshrig(t, "run", "--tool", "exec:../../docs/examples/ssh-tt-honest.sh",
		"--cases", "exec.*.remote-kill", "--repeat", "20")
	sum, _ := rep["summary"].(map[string]any)
	if code != exitPass || sum["inconclusive"] != float64(0) || sum["pass"] != float64(80) {
		t.Fatalf("exit %d, summary %v, want 80 case runs passing:\n%s", code, sum, stderr)
	}
}
