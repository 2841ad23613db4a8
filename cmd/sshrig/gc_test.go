package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestGCRemovesAKilledRunsTempDirs: a rig killed with SIGKILL mid-case
// leaves its temporary directories (the tool's key among them); gc's
// sweep removes each, says so, and leaves nothing of that run.
func TestGCRemovesAKilledRunsTempDirs(t *testing.T) {
	tmp := t.TempDir()
	tool, fifo := hangAfterPreflight(t)
	cmd := startRigIn(t, tmp, "proxy", tool, "started.blackhole.survive")
	toolPID := toolReady(t, fifo)
	t.Cleanup(func() { syscall.Kill(toolPID, syscall.SIGKILL) })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	var left []string
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		left = append(left, e.Name())
	}
	for _, kind := range []string{"keys", "scratch", "gates"} {
		prefix := fmt.Sprintf("sshrig-%s-%d-", kind, cmd.Process.Pid)
		if !slices.ContainsFunc(left, func(n string) bool { return strings.HasPrefix(n, prefix) }) {
			t.Errorf("no %s* left by the killed rig in %v", prefix, left)
		}
	}
	var out bytes.Buffer
	n, err := gcTempDirs(&out, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 || strings.Count(out.String(), "removed temporary directory ") != n {
		t.Errorf("gc removed %d:\n%s", n, out.String())
	}
	if after, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("sshrig-*-%d-*", cmd.Process.Pid))); len(after) > 0 {
		t.Errorf("left after gc: %v", after)
	}
}
