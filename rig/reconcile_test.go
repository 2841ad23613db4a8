package rig_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/reconcile/score"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
)

// TestReconcileDefaultIsRigsWorkload keeps the scorer's default operation the
// rig's default workload, in both of its variants.
func TestReconcileDefaultIsRigsWorkload(t *testing.T) {
	op, err := score.LookupOperation(score.DefaultOperation)
	if err != nil {
		t.Fatal(err)
	}
	if score.DefaultOperation != matrix.DefaultOperation {
		t.Errorf("default operation %q, the rig's is %q", score.DefaultOperation, matrix.DefaultOperation)
	}
	if got, want := op.Command(score.Succeed), (matrix.Case{}).Workload("c-test"); got != want {
		t.Errorf("Succeed variant %q, the rig's workload is %q", got, want)
	}
	if got, want := op.Command(score.Fail), (matrix.Case{ExitCode: score.FailExitCode}).Workload("c-test"); got != want {
		t.Errorf("Fail variant %q, the rig's workload with exit %d is %q", got, score.FailExitCode, want)
	}
}

// TestReconcileRunDirIsLikeRuns: a scoring run's directory is written by the
// same session as a run's: the server's events in a log that verifies, the
// report with the log's head, and a transcript per state.
func TestReconcileRunDirIsLikeRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, err := rig.CreateRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := rig.Reconcile(ctx, rig.ReconcileOptions{Out: out, Score: score.Options{
		Probe:     "echo '{\"state\":\"never_started\"}'",
		Scenarios: []reconcile.Scenario{reconcile.NeverStarted},
	}})
	if cerr := out.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if rep.LogHead == "" || rep.Target != "embedded" {
		t.Errorf("report: log head %q, target %q", rep.LogHead, rep.Target)
	}
	b, err := os.ReadFile(filepath.Join(dir, report.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk struct {
		LogHead string `json:"log_head"`
	}
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.LogHead != rep.LogHead {
		t.Errorf("report.json log head %q (err %v), the run's %q", onDisk.LogHead, err, rep.LogHead)
	}
	res, err := eventlog.VerifyFile(filepath.Join(dir, eventlog.FileName), rep.LogHead)
	if err != nil || res.Problem != nil || res.Lines == 0 {
		t.Errorf("event log: %+v, %v", res, err)
	}
	if ts, _ := filepath.Glob(filepath.Join(dir, "transcripts", "*.json")); len(ts) == 0 {
		t.Error("no transcript written")
	}
}
