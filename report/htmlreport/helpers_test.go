package htmlreport

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
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
	cases, err := matrix.Select(matrix.DefaultMatrix(), globs)
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
