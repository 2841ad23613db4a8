package htmlreport

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/rig"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runDir runs the cases the globs select with tool name into a new run
// directory, the way sshrig run does, and returns its path.
func runDir(t *testing.T, night, name string, globs []string, rp rig.Repeat) string {
	t.Helper()
	tl, err := tools.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := rig.Select(rig.DefaultMatrix(), globs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), night)
	dir, err := rig.CreateRunDir(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// rig.Run writes report.json, with the log's head.
	if _, err := rig.Run(ctx, rig.Options{Tool: tl, Cases: cases, Parallel: 2, Repeat: rp, Out: dir}); err != nil {
		t.Fatal(err)
	}
	if err := dir.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// threeRuns are three nights: the reference tool once, the flaky mutant
// repeated (with failing case runs), and the reference tool repeated.
func threeRuns(t *testing.T) []string {
	globs := []string{"none.*", "started.reset.*", "exit-status.close.*"}
	return []string{
		runDir(t, "night1", "reference", globs, rig.Repeat{}),
		runDir(t, "night2", "mutant:sometimes-lost-status-is-success", globs, rig.Repeat{Times: 12, Seed: 7}),
		runDir(t, "night3", "reference", globs, rig.Repeat{Times: 3, Seed: 8}),
	}
}
