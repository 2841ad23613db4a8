package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/tool"
)

type runFlags struct {
	tool     string
	cases    string
	parallel int
	out      string
	json     string
	junit    string
	budget   time.Duration
	quiet    bool
	matrix   string
	logCmds  bool
	noPTY    bool
	targetFlags
	mcp    mcpFlags
	repeat repeatFlags // repeat.go
	shard  shardFlags  // shard.go

	memprofile string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the case matrix against a tool and judge every case",
		Long: `run runs every selected case of the matrix against the tool: it cuts the tool's
SSH transport at the case's moment, establishes what really happened remotely,
and judges what the tool reported. It prints a table and a one-line summary,
and writes a run directory (report.json, events.jsonl, transcripts/).

Before any case, a preflight runs the tool once with no fault: it must print a
parseable result reporting success, and the ledger must show exactly one start
and one complete. Otherwise run stops with exit code 3.

Cases run --parallel at a time. The default was measured, not derived from
the number of cores: a case mostly waits (a blackhole case until the tool's
own liveness deadline fires, c05 for its whole budget), so on two cores the
default matrix takes 11.7 s at 2, 5.1 s at 8 and 3.3 s at 16; beyond 16 it
gains under 0.2 s, its floor being c05's budget. At 16, 50 consecutive runs
with two CPU hogs gave every verdict exact (docs/performance.md).

Exit codes: 0 every case passed, 1 a verdict failed, 2 bad usage or input,
3 the rig could not run (including an inconclusive case or preflight).`,
		Example: `  sshrig run
  sshrig run --tool mutant:lost-status-is-success
  sshrig run --cases 'started.*,output.*' --parallel 4 --junit junit.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tool, "tool", "reference", "tool under test: a built-in tool (see 'sshrig tools') 'exec:COMMAND ARGS…' (docs/tool-contract.md), or an MCP server as 'mcp:COMMAND ARGS…' or 'mcp+http://HOST:PORT/PATH' (docs/mcp.md)")
	fl.StringVar(&f.cases, "cases", "", "comma-separated globs over case ids and aliases (default: every case; see 'sshrig cases')")
	fl.StringVar(&f.matrix, "matrix", "", "matrix file (YAML, docs/matrix.md) instead of the default matrix")
	fl.BoolVar(&f.noPTY, "refuse-pty", false, "the server refuses every pty-req (as sshd with PermitTTY no), the preflight's included")
	fl.BoolVar(&f.logCmds, "log-commands", false, "put commands' text in the event log (by default only their operation and digest)")
	fl.IntVar(&f.parallel, "parallel", rig.DefaultParallel, "cases run at once (the default is measured, see above)")
	fl.StringVar(&f.out, "out", "", "run directory (default: a new dated directory under ./sshrig-runs/)")
	fl.StringVar(&f.json, "json", "", "also write the JSON report to this file")
	fl.StringVar(&f.junit, "junit", "", "also write JUnit XML to this file")
	f.targetFlags.register(fl)
	f.mcp.register(fl)
	fl.DurationVar(&f.budget, "budget", rig.DefaultBudget, "deadline the tool gets per case; a tool still running after it (plus 2s grace) hangs")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no per-case progress on stderr")
	f.repeat.register(fl)
	f.shard.register(fl)
	fl.StringVar(&f.memprofile, "memprofile", "", "write a heap profile here when the run ends, for 'go tool pprof' (docs/performance.md)")
	return cmd
}

func lookupTool(name string) (tool.Tool, error) {
	t, err := tools.Lookup(name)
	switch {
	case errors.Is(err, tools.ErrUnknownTool):
		return nil, usageError("unknown tool %q; built-in tools: %s; or an external program as 'exec:COMMAND ARGS…'", name, strings.Join(tools.Names(), ", "))
	case err != nil:
		return nil, usageError("--tool: %v", err)
	}
	return t, nil
}

func runRun(cmd *cobra.Command, f runFlags) error {
	t, err := f.mcp.lookup(f.tool)
	if err != nil {
		return err
	}
	if t == nil {
		t, err = lookupTool(f.tool)
	}
	if err != nil {
		return err
	}
	if c, ok := t.(io.Closer); ok {
		defer c.Close()
	}
	if f.parallel < 1 {
		return usageError("--parallel must be at least 1, got %d", f.parallel)
	}
	if f.budget <= 0 {
		return usageError("--budget must be positive, got %s", f.budget)
	}
	target, err := f.rigTarget(cmd, f.quiet)
	if err != nil {
		return err
	}
	matrix, err := loadMatrix(f.matrix)
	if err != nil {
		return err
	}
	cases, steps, err := rig.SplitSelection(matrix, rig.SplitGlobs(f.cases))
	if err != nil {
		return usageError("%v", err)
	}
	stepsOnly := len(cases) == 0 && len(steps.Required) > 0
	if len(cases) == 0 && !stepsOnly {
		return usageError("no cases selected")
	}
	rp, err := f.repeat.options(parallelChanged(cmd), cases)
	if err != nil {
		return err
	}
	if _, sharded, _ := f.shard.resolve(); stepsOnly && sharded {
		return usageError("--cases %s selects only step cases, which a sharded run does not make (every shard's preflight would make the same ones): select matrix cases too", f.cases)
	}
	shard, cases, err := f.shard.split(cases, rp.On() && f.repeat.seed == "")
	if err != nil {
		return err
	}
	applicable, why := 0, ""
	if stepsOnly {
		applicable = 1 // step cases are judged after the preflight
	}
	for _, c := range cases {
		if ok, reason := rig.Applies(c, t); ok {
			applicable++
		} else {
			why = reason
		}
	}
	if applicable == 0 {
		return usageError("none of the %d selected cases can run against %s: %s", len(cases), t.Name(), why)
	}

	dir, dirPath, err := createRunDir(f.out)
	if err != nil {
		return err
	}
	dir.LogCommands = f.logCmds
	stderr := cmd.ErrOrStderr()
	o := rig.Options{Tool: t, Cases: cases, Parallel: f.parallel, Budget: f.budget, Target: target, Out: dir, RefusePTY: f.noPTY, Repeat: rp,
		Shard: shard, JUnit: f.junit != "", StepCases: steps}
	if !f.quiet {
		o.Progress = stderr
		more := ""
		if len(steps.Globs) > 0 && shard == nil {
			more = " (and the step cases of the tool's conversation, after the preflight)"
		}
		fmt.Fprintf(stderr, "sshrig: %d cases%s%s, tool %s, target %s, run directory %s\n", len(cases), more, shardNote(shard), t.Name(), f.target, dirPath)
	}
	f.repeat.header(stderr, rp)
	rep, runErr := rig.Run(cmd.Context(), o)
	writeMemProfile(stderr, f.memprofile) // profile.go
	if rep != nil && f.json != "" {
		// rig wrote the run directory's report.json; --json is a copy.
		// A repeated run's report is streamed from its spool into the file;
		// the file is the whole report.
		b, err := os.ReadFile(filepath.Join(dirPath, rig.ReportFile))
		if err != nil {
			fmt.Fprintf(stderr, "sshrig: --json: %v\n", err)
		} else {
			writeJSONCopy(stderr, f.json, b)
		}
	}
	if err := dir.Close(); err != nil {
		fmt.Fprintf(stderr, "sshrig: run directory: %v\n", err)
	}
	var pre *rig.PreflightError
	if errors.As(runErr, &pre) {
		return rigError(fmt.Errorf("%v\n  the tool cannot run a case with no fault, so no case can be judged; see %s",
			pre, dirPath+"/report.json"))
	}
	var sel *rig.SelectionError
	if errors.As(runErr, &sel) {
		return usageError("%v", sel)
	}
	if runErr != nil {
		return rigError(runErr)
	}
	out := cmd.OutOrStdout()
	writeResults(out, rep)
	if rep.CasesOnDisk() && (f.junit != "" || os.Getenv("GITHUB_ACTIONS") == "true") {
		// A repeated run kept its case runs in report.json only; JUnit and
		// the annotations list them, so read them back now the run is over.
		full, err := rig.ReadReport(dirPath)
		if err != nil {
			return rigError(err)
		}
		rep = full
	}
	fmt.Fprintf(out, "report: %s\n", dirPath+"/report.json")
	ciOutput(out, stderr, rep, f.matrix, matrix) // ci.go: GitHub Actions annotations and summary
	if f.junit != "" {
		if err := writeJUnit(f.junit, rep); err != nil {
			fmt.Fprintf(stderr, "sshrig: --junit: %v\n", err)
		}
	}
	return verdictExit(rep, f.repeat.failure(rep), t.Name())
}

// writeJUnit writes the report's JUnit XML to path.
func writeJUnit(path string, rep *rig.Report) error {
	b, err := rep.JUnit()
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	return err
}

// verdictExit is the exit of a run (or a merge of shards) that judged its
// cases: failure (exit 1, or nil) unless nothing ran (2), then 3 for an
// inconclusive case.
func verdictExit(rep *rig.Report, failure error, toolName string) error {
	s := rep.Summary
	switch {
	case s.Executed() == 0:
		return usageError("no case could run against %s (all %d skipped)", toolName, s.Skipped)
	case failure != nil:
		return failure
	case s.Inconclusive > 0:
		return rigError(fmt.Errorf("%d case(s) inconclusive: the rig could not establish what it needed", s.Inconclusive))
	}
	return nil
}
