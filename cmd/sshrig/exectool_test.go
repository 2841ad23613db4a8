package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/tool"
)

// TestExecToolMatchesInProcess runs the whole matrix with the reference
// client in-process and as an external program (`exec:sshrig exec`), in the
// same test: both pass every case they can run, with the same verdicts, and
// the log records each one's cases per second (docs/performance.md).
func TestExecToolMatchesInProcess(t *testing.T) {
	sshrigOnPath(t)
	bin := filepath.Join(filepath.SplitList(os.Getenv("PATH"))[0], "sshrig")
	measure := func(tl tool.Tool) (*report.Report, float64) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		rep, err := rig.Run(ctx, rig.Options{Tool: tl, Cases: matrix.DefaultMatrix(), Parallel: rig.DefaultParallel}) // as before sizing: the figures compare both at one parallelism
		if err != nil {
			t.Fatal(err)
		}
		return rep, float64(rep.Summary.Executed()) / time.Since(start).Seconds()
	}
	in, inRate := measure(tools.Reference{})
	ext, extRate := measure(tools.External{Argv: []string{bin, "exec"}})
	t.Logf("in-process reference: %s, %.2f cases/s", in.SummaryLine(), inRate)
	t.Logf("exec:sshrig exec:     %s, %.2f cases/s", ext.SummaryLine(), extRate)
	for i, c := range ext.Cases {
		if c.Verdict == report.Fail || c.Verdict == report.Inconclusive {
			t.Errorf("exec:sshrig exec: %s %s %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
		}
		if in.Cases[i].Verdict != report.Skipped && c.Verdict != in.Cases[i].Verdict {
			t.Errorf("%s: in-process %s, external %s", c.ID, in.Cases[i].Verdict, c.Verdict)
		}
	}
	if ext.Summary.Pass != in.Summary.Pass {
		t.Errorf("external passed %d, in-process %d", ext.Summary.Pass, in.Summary.Pass)
	}
}
