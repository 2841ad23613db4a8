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

	"github.com/sshrig/sshrig/rig"
)

// TestShardsMergeLikeOneRun: three shards of the default matrix, run at
// once on this machine (each with its own server), merged, give the same
// verdict, grade, truth and violations per case as one unsharded run, as
// internal/reportcmp compares them.
func TestShardsMergeLikeOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default matrix twice")
	}
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
	one, err := rig.ReadReport(whole)
	if err != nil {
		t.Fatal(err)
	}
	all, err := rig.ReadReport(merged)
	if err != nil {
		t.Fatal(err)
	}
	if one.Summary.Cases != all.Summary.Cases || one.Summary.Pass != all.Summary.Pass || one.Summary.Skipped != all.Summary.Skipped {
		t.Errorf("summaries differ: unsharded %+v, merged %+v", one.Summary, all.Summary)
	}
	if !strings.Contains(out, fmt.Sprintf("%d cases: %d pass, 0 fail", len(rig.DefaultMatrix()), one.Summary.Pass)) {
		t.Errorf("merge's summary line is not the whole's:\n%s", out)
	}
	cmp := exec.Command("go", "run", "../../internal/reportcmp", filepath.Join(whole, "report.json"), filepath.Join(merged, "report.json"))
	b, err := cmp.CombinedOutput()
	if err != nil {
		t.Fatalf("reportcmp: %v\n%s", err, b)
	}
	want := fmt.Sprintf("%d cases compared, differences: 0", len(rig.DefaultMatrix()))
	if !strings.Contains(string(b), want) {
		t.Fatalf("reportcmp says\n%s\nwant %q", b, want)
	}
	t.Logf("%s; merged %d+%d+%d lines of event log", strings.TrimSpace(string(b)), all.Merged[0].Lines, all.Merged[1].Lines, all.Merged[2].Lines)
}
