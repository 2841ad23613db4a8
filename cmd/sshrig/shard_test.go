package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// TestShardsMergeLikeOneRun: three shards of the default matrix, run at
// once on this machine (each with its own server), merged, give the same
// verdict, grade, truth and violations per case as one unsharded run, as
// internal/reportcmp compares them.
func TestShardsMergeLikeOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default matrix twice")
	}
	t.Parallel() // after the tests that count this process's children
	dir := t.TempDir()
	sshrig := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), args, &out, &out)
		return code, out.String()
	}
	whole := filepath.Join(dir, "whole")
	if code, out := sshrig("run", "-q", "--out", whole); code != 0 {
		t.Fatalf("unsharded run exited %d:\n%s", code, out)
	}
	var wg sync.WaitGroup
	shards := make([]string, 3)
	codes, outs := make([]int, 3), make([]string, 3)
	for i := range shards {
		shards[i] = filepath.Join(dir, fmt.Sprintf("shard-%d", i+1))
		wg.Go(func() {
			codes[i], outs[i] = sshrig("run", "-q", "--shard", fmt.Sprintf("%d/3", i+1), "--out", shards[i], "--junit", shards[i]+".xml")
		})
	}
	wg.Wait()
	for i := range shards {
		if codes[i] != 0 {
			t.Fatalf("shard %d/3 exited %d:\n%s", i+1, codes[i], outs[i])
		}
	}
	merged := filepath.Join(dir, "merged")
	code, out := sshrig(append([]string{"merge", "--out", merged}, shards...)...)
	if code != 0 {
		t.Fatalf("merge exited %d:\n%s", code, out)
	}
	one, err := report.ReadReport(whole)
	if err != nil {
		t.Fatal(err)
	}
	all, err := report.ReadReport(merged)
	if err != nil {
		t.Fatal(err)
	}
	if one.Summary.Cases != all.Summary.Cases || one.Summary.Pass != all.Summary.Pass || one.Summary.Skipped != all.Summary.Skipped {
		t.Errorf("summaries differ: unsharded %+v, merged %+v", one.Summary, all.Summary)
	}
	if !strings.Contains(out, fmt.Sprintf("%d cases: %d pass, 0 fail", len(matrix.DefaultMatrix()), one.Summary.Pass)) {
		t.Errorf("merge's summary line is not the whole's:\n%s", out)
	}
	cmp := exec.Command("go", "run", "../../internal/reportcmp", filepath.Join(whole, "report.json"), filepath.Join(merged, "report.json"))
	b, err := cmp.CombinedOutput()
	if err != nil {
		t.Fatalf("reportcmp: %v\n%s", err, b)
	}
	want := fmt.Sprintf("%d cases compared, differences: 0", len(matrix.DefaultMatrix()))
	if !strings.Contains(string(b), want) {
		logDifferences(t, one, all)
		t.Fatalf("reportcmp says\n%s\nwant %q", b, want)
	}
	t.Logf("%s; merged %d+%d+%d lines of event log", strings.TrimSpace(string(b)), all.Merged[0].Lines, all.Merged[1].Lines, all.Merged[2].Lines)
}

// logDifferences logs, for each case whose verdict or grade differs between
// two reports, what the tool reported in each and how the cut went: what a
// reader of a failure needs to tell the tool's timing from the rig's.
func logDifferences(t *testing.T, a, b *report.Report) {
	byID := map[string]report.CaseReport{}
	for _, c := range b.Cases {
		byID[c.ID] = c
	}
	describe := func(c report.CaseReport) string {
		s := fmt.Sprintf("%s %s, tool %d ms, cut latency %d us", c.Verdict, c.Grade, c.ToolMS, c.CutLatencyUS)
		if c.Reported != nil {
			s += fmt.Sprintf(", reported %s/%s: %q", c.Reported.Category, c.Reported.Retry, c.Reported.Message)
		}
		return s
	}
	for _, x := range a.Cases {
		y, ok := byID[x.ID]
		if ok && (x.Verdict != y.Verdict || x.Grade != y.Grade) {
			t.Logf("%s: unsharded %s; merged %s", x.ID, describe(x), describe(y))
		}
	}
}
