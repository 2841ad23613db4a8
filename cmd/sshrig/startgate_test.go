package main

import (
	"testing"

	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/report"
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
	dir := t.TempDir()
	code, _, stderr, rep := sshrigIn(t, dir, "run", "--tool", "exec:../../docs/examples/ssh-tt-honest.sh",
		"--cases", "exec.*.remote-kill", "--repeat", "20")
	sum, _ := rep["summary"].(map[string]any)
	if code != exitPass || sum["inconclusive"] != float64(0) || sum["pass"] != float64(80) {
		if all, err := report.ReadReport(dir); err == nil {
			for _, cr := range all.Cases {
				if cr.Verdict != report.Pass {
					t.Logf("%s: %s: %s; truth %+v", cr.ID, cr.Verdict, cr.Reason, cr.Truth)
				}
			}
		}
		t.Fatalf("exit %d, summary %v, want 80 case runs passing:\n%s", code, sum, stderr)
	}
}
