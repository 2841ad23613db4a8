package rig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// TamperedError is a shard whose event log does not verify against the
// head its report recorded (the check sshrig verify makes).
type TamperedError struct {
	Dir     string
	Problem error // the first problem the verification found (line, kind, detail)
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("shard %s: event log tampered: %v", e.Dir, e.Problem)
}

// ShardsError says why the run directories given do not make one whole run:
// a directory that is no shard, shards of different runs, a shard given
// twice or one missing.
type ShardsError struct{ Reason string }

func (e *ShardsError) Error() string { return "rig: " + e.Reason }

func shardsErr(format string, args ...any) error {
	return &ShardsError{Reason: fmt.Sprintf(format, args...)}
}

// shardRun is one shard's run directory, read and verified.
type shardRun struct {
	dir string
	rep *report.Report
	log eventlog.Result
}

// Merge reads the shards' run directories, verifies each one's event log,
// checks that together they are every shard of one selection exactly once,
// and writes into out one run directory of the whole: report.json (its
// summary and rates those of the whole), an event log that re-chains every
// shard's entries after one shard_merged entry per shard, and the shards'
// transcripts. A shard whose preflight failed is a *PreflightError; a
// tampered log a *TamperedError (all of them, joined); shards that do not
// fit a *ShardsError.
func Merge(out *RunDir, dirs []string) (*report.Report, error) {
	runs, err := readShards(dirs)
	if err != nil {
		return nil, err
	}
	if err := checkShards(runs); err != nil {
		return nil, err
	}
	rep := mergeReports(runs)
	for _, s := range runs {
		rep.Merged = append(rep.Merged, report.MergedShard{Dir: s.dir, Index: s.rep.Shard.Index, Count: s.rep.Shard.Count,
			Head: s.rep.LogHead, Lines: s.log.Lines})
	}
	if err := out.appendShards(runs); err != nil {
		return nil, err
	}
	rep.LogHead = out.Head()
	b, err := rep.JSON()
	if err == nil {
		err = out.WriteFile(report.ReportFile, b)
	}
	if err != nil {
		return nil, fmt.Errorf("rig: %s: %w", report.ReportFile, err)
	}
	return rep, nil
}

// readShards reads each directory's report and verifies its event log.
func readShards(dirs []string) ([]shardRun, error) {
	var runs []shardRun
	var tampered []error
	for _, dir := range dirs {
		rep, err := report.ReadReport(dir)
		if err != nil {
			return nil, err
		}
		if rep.Shard == nil {
			return nil, shardsErr("%s is not a shard: its run had no --shard", dir)
		}
		if rep.Preflight.Error != "" {
			return nil, &report.PreflightError{Reason: fmt.Sprintf("shard %s: %s", dir, rep.Preflight.Error)}
		}
		res, err := eventlog.VerifyFile(filepath.Join(dir, eventlog.FileName), rep.LogHead)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", dir, err)
		}
		if res.Problem != nil {
			tampered = append(tampered, &TamperedError{Dir: dir, Problem: *res.Problem})
			continue
		}
		runs = append(runs, shardRun{dir: dir, rep: rep, log: res})
	}
	if len(tampered) > 0 {
		return nil, errors.Join(tampered...)
	}
	slices.SortStableFunc(runs, func(a, b shardRun) int { return a.rep.Shard.Index - b.rep.Shard.Index })
	return runs, nil
}

// netOf is the network a report's run had; reports written before the
// kernel network had the proxy's.
func netOf(rep *report.Report) string {
	if rep.Net == "" {
		return string(NetProxy)
	}
	return rep.Net
}

// checkShards refuses shards that are not every part of one run exactly
// once: different counts, selections, tools, networks or seeds; a shard given twice or
// missing; a shard that did not run all of its cases.
func checkShards(runs []shardRun) error {
	first := runs[0]
	byIndex := map[int]string{}
	for _, s := range runs {
		for _, c := range []struct{ what, a, b string }{
			{"shard count", fmt.Sprint(first.rep.Shard.Count), fmt.Sprint(s.rep.Shard.Count)},
			{"selection", strings.Join(first.rep.Shard.Selection, ","), strings.Join(s.rep.Shard.Selection, ",")},
			{"tool", first.rep.Tool, s.rep.Tool},
			{"tool settings", fmt.Sprint(first.rep.ToolSettings), fmt.Sprint(s.rep.ToolSettings)},
			{"target", first.rep.Target, s.rep.Target},
			{"network", netOf(first.rep), netOf(s.rep)},
			{"jump host", fmt.Sprint(first.rep.Jump), fmt.Sprint(s.rep.Jump)},
			{"hosts", fmt.Sprint(first.rep.Hosts), fmt.Sprint(s.rep.Hosts)},
			{"budget", first.rep.Budget, s.rep.Budget},
			{"repetition", repeatKey(first.rep.Repeat), repeatKey(s.rep.Repeat)},
		} {
			if c.a != c.b {
				if c.what == "selection" {
					c.a, c.b = fmt.Sprintf("of %d cases", len(first.rep.Shard.Selection)), fmt.Sprintf("another of %d", len(s.rep.Shard.Selection))
				}
				return shardsErr("%s and %s are not shards of one run: %s %s, %s", first.dir, s.dir, c.what, c.a, c.b)
			}
		}
		if other, dup := byIndex[s.rep.Shard.Index]; dup {
			return shardsErr("shard %s given twice: %s and %s", s.rep.Shard, other, s.dir)
		}
		byIndex[s.rep.Shard.Index] = s.dir
		if err := ranAll(s); err != nil {
			return err
		}
	}
	var missing []string
	for i := 1; i <= first.rep.Shard.Count; i++ {
		if _, ok := byIndex[i]; !ok {
			missing = append(missing, matrix.Shard{Index: i, Count: first.rep.Shard.Count}.String())
		}
	}
	if len(missing) > 0 {
		return shardsErr("missing shard %s of the run (given: %d of %d shards)", strings.Join(missing, ", "), len(runs), first.rep.Shard.Count)
	}
	return nil
}

// repeatKey is what shards of one repeated run share.
func repeatKey(r *report.RepeatReport) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("seed %d, %d times, for %q", r.Seed, r.Times, r.For)
}

// ranAll checks that the shard ran its cases and no other.
func ranAll(s shardRun) error {
	want := shardIDs(s.rep.Shard)
	ran := map[string]bool{}
	for _, c := range s.rep.Cases {
		if !slices.Contains(want, c.ID) {
			return shardsErr("shard %s (%s) ran %s, which is not its case", s.rep.Shard, s.dir, c.ID)
		}
		ran[c.ID] = true
	}
	var not []string
	for _, id := range want {
		if !ran[id] {
			not = append(not, id)
		}
	}
	if len(not) > 0 {
		return shardsErr("shard %s (%s) did not run %s", s.rep.Shard, s.dir, strings.Join(not, ", "))
	}
	return nil
}

// mergeReports is the report of the whole: every shard's case runs in the
// selection's order, the summary over all of them from the first shard's
// start to the last one's end, and the rates of the whole.
func mergeReports(runs []shardRun) *report.Report {
	first := runs[0].rep
	rep := &report.Report{Version: report.ReportVersion, Tool: first.Tool, Target: first.Target, Net: first.Net, Jump: first.Jump, Hosts: first.Hosts, Budget: first.Budget, ToolSettings: first.ToolSettings,
		Where: fmt.Sprintf("%d shards", len(runs)), Started: first.Started, Preflight: first.Preflight, Repeat: first.Repeat}
	var end time.Time
	for _, s := range runs {
		if s.rep.Started.Before(rep.Started) {
			rep.Started = s.rep.Started
		}
		if e := s.rep.Started.Add(time.Duration(s.rep.Summary.DurationMS) * time.Millisecond); e.After(end) {
			end = e
		}
		rep.Cases = append(rep.Cases, s.rep.Cases...)
		rep.WroteJUnit = rep.WroteJUnit || s.rep.WroteJUnit
	}
	pos := map[string]int{}
	var order []matrix.Case
	for i, id := range first.Shard.Selection {
		pos[id] = i
		order = append(order, matrix.Case{ID: id})
	}
	slices.SortStableFunc(rep.Cases, func(a, b report.CaseReport) int { return pos[a.ID] - pos[b.ID] })
	rep.Summary = report.Summarize(rep.Cases, end.Sub(rep.Started))
	if rep.Repeat != nil {
		rep.Rates = inMatrixOrder(report.Rates(rep.Cases), order)
	}
	return rep
}

// appendShards writes the merged event log: per shard a shard_merged entry
// saying what was verified, then that shard's entries as they were (time,
// source, event, case, data), chained anew; and it copies the transcripts.
func (d *RunDir) appendShards(runs []shardRun) error {
	for _, s := range runs {
		_, err := d.log.Append(eventlog.Entry{Source: eventlog.SourceRig, Event: "shard_merged", Data: map[string]any{
			"dir": s.dir, "shard": s.rep.Shard.String(), "log_head": s.rep.LogHead, "log_lines": s.log.Lines}})
		if err != nil {
			return err
		}
	}
	for _, s := range runs {
		if err := d.copyLog(s.dir); err != nil {
			return err
		}
		for _, c := range s.rep.Cases {
			if c.Transcript == "" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(s.dir, c.Transcript))
			if err == nil {
				err = d.WriteFile(c.Transcript, b)
			}
			if err != nil {
				return fmt.Errorf("shard %s: transcript: %w", s.dir, err)
			}
		}
	}
	return nil
}

// copyLog re-appends every entry of dir's (verified) event log.
func (d *RunDir) copyLog(dir string) error {
	path := filepath.Join(dir, eventlog.FileName)
	return eventlog.ReadFile(path, func(n int, e eventlog.Entry) error {
		e.Seq, e.Prev = 0, "" // the merged log chains its own
		if _, err := d.log.Append(e); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		return nil
	})
}
