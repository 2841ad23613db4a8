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

	"github.com/sshrig/sshrig/internal/mcptool"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reading"
	"github.com/sshrig/sshrig/report"
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
	reading  string
	net      string
	jump     bool
	// serverFaults runs the server matrix (matrixFor).
	serverFaults bool
	hosts        int
	// agent, set by sshrig agent, is the agent under test (agent.go).
	agent agentFlags
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

Cases run at once as many as the tool and the machine allow, at most 16: the
preflight measures what a case of the tool costs (CPU and wall time) and how
busy the machine is, and no more cases start than would leave one waiting more
than a quarter of its budget for a core; a line says what was chosen and why
(report.json: "parallel"). --parallel N sets it instead. 16 is the most because
a case mostly waits (a blackhole case until the tool's own liveness deadline
fires, c05 for its whole budget): beyond 16 the default matrix gains under
0.2 s. A case whose verdict rests on timing (a hang, a tool that gave up before
the moment) seen while the machine was busy runs again alone after the rest;
its verdict is the alone run's, and report.json keeps both ("confirmed_alone";
docs/performance.md). Before a tool counts as hung, the time the machine made
the case wait (Linux's /proc/pressure, up to one grace) is given back; a hang
that outlasts it would be one alone too and is not run again (docs/cli.md).

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
	fl.StringVar(&f.reading, "reading", "", "for an exec: tool that prints no result: read its own report (exit code, signal, output) with this reading, a built-in ("+strings.Join(reading.Builtins(), ", ")+") or a YAML file (package reading)")
	fl.BoolVar(&f.noPTY, "refuse-pty", false, "the server refuses every pty-req (as sshd with PermitTTY no), the preflight's included")
	fl.BoolVar(&f.logCmds, "log-commands", false, "put commands' text in the event log (by default only their operation and digest)")
	fl.IntVar(&f.parallel, "parallel", rig.DefaultParallel, "most cases run at once (default: sized to the tool and the machine, at most 16; see above)")
	fl.StringVar(&f.out, "out", "", "run directory (default: a new dated directory under ./sshrig-runs/)")
	fl.StringVar(&f.json, "json", "", "also write the JSON report to this file")
	fl.StringVar(&f.junit, "junit", "", "also write JUnit XML to this file")
	f.targetFlags.register(fl)
	fl.StringVar(&f.net, "net", string(rig.NetProxy), "where the tool meets the server: proxy (the rig's TCP proxy on loopback cuts) or kernel (the tool in a network namespace of its own; blackhole, reset and vanish made by the kernel with nftables; needs root; adds the vanish cases; docs/network.md)")
	fl.BoolVar(&f.serverFaults, "server-faults", false, "run the faults the far side makes instead of the default matrix: the server serving the case crashes, its host reboots, a command's channel ends without its exit status, each at its moments (docs/server-faults.md)")
	fl.BoolVar(&f.jump, "jump", false, "reach the target through a jump host, as ssh -J does: the tool gets SSHRIG_JUMP (user@host:port) and runs the jump matrix, each moment cut on the tool's connection to the jump host or on the jump host's to the target (docs/network.md)")
	fl.IntVar(&f.hosts, "hosts", 0, "run each case on a fleet of N hosts (2 to 64): the tool gets SSHRIG_HOSTS and one command for all of them, reports each host in its result's hosts, and runs the fleet matrix, one host (or a few) cut at each moment while the others complete (docs/fleets.md)")
	f.mcp.register(fl)
	fl.DurationVar(&f.budget, "budget", rig.DefaultBudget, "deadline the tool gets per case; a tool still running after it (plus 2s grace) hangs")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no per-case progress on stderr")
	f.repeat.register(fl)
	f.shard.register(fl)
	fl.StringVar(&f.memprofile, "memprofile", "", "write a heap profile here when the run ends, for 'go tool pprof' (docs/performance.md)")
	groupFlags(cmd)       // help.go
	completeRunFlags(cmd) // completion.go
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
	p, err := planRun(f)
	if p != nil && p.closeTool != nil {
		defer p.closeTool()
	}
	if err != nil {
		return err
	}
	target, err := f.rigTarget(cmd, f.quiet)
	if err != nil {
		return err
	}
	dir, dirPath, err := createRunDir(f.out)
	if err != nil {
		return err
	}
	dir.LogCommands = f.logCmds
	stderr := cmd.ErrOrStderr()
	o := rig.Options{Tool: p.tool, Cases: p.cases, Parallel: f.parallel, Budget: f.budget, Target: target, Net: p.net, Jump: f.jump, Hosts: f.hosts, Out: dir, RefusePTY: f.noPTY, Repeat: p.repeat,
		Shard: p.shard, JUnit: f.junit != "", StepCases: p.steps}
	if !parallelChanged(cmd) {
		o.Parallel = 0 // sized to the tool and the machine (rig/sizing.go)
	}
	o.Reading = p.reading
	if !f.quiet {
		o.Progress = stderr
		more := ""
		if len(p.steps.Globs) > 0 && p.shard == nil {
			more = " (and the step cases of the tool's conversation, after the preflight)"
		}
		through := ""
		if f.jump {
			through = " through a jump host"
		}
		if f.hosts > 1 {
			through = fmt.Sprintf(", a fleet of %d hosts", f.hosts)
		}
		fmt.Fprintf(stderr, "sshrig: %d cases%s%s, tool %s, target %s%s, network %s, run directory %s\n", len(p.cases), more, shardNote(p.shard), p.tool.Name(), f.target, through, p.net, dirPath)
	}
	f.repeat.header(stderr, p.repeat)
	rep, runErr := rig.Run(cmd.Context(), o)
	writeMemProfile(stderr, f.memprofile) // profile.go
	if rep != nil && f.json != "" {
		// rig wrote the run directory's report.json; --json is a copy.
		// A repeated run's report is streamed from its spool into the file;
		// the file is the whole report.
		b, err := os.ReadFile(filepath.Join(dirPath, report.ReportFile))
		if err != nil {
			fmt.Fprintf(stderr, "sshrig: --json: %v\n", err)
		} else {
			writeJSONCopy(stderr, f.json, b)
		}
	}
	if err := dir.Close(); err != nil {
		fmt.Fprintf(stderr, "sshrig: run directory: %v\n", err)
	}
	return finishRun(cmd, f, p, dirPath, rep, runErr)
}

// runPlan is what a run was asked for, checked before anything starts.
type runPlan struct {
	tool      tool.Tool
	closeTool func() // set when the tool holds something to close (an MCP server)
	reading   *reading.Reading
	all       []matrix.Case // the whole matrix the cases were selected from
	cases     []matrix.Case
	steps     matrix.StepSelection
	repeat    rig.Repeat
	shard     *report.ShardReport
	net       rig.Net
}

// planRun checks the flags and selects the cases; an error is a usage
// error (exit 2) found before any target, run directory or preflight.
func planRun(f runFlags) (*runPlan, error) {
	rd, err := f.openReading()
	if err != nil {
		return nil, err
	}
	var t tool.Tool
	if f.agent.command != "" {
		t, err = f.agent.tool()
	} else if t, err = f.mcp.lookup(f.tool, rd != nil); err == nil && t == nil {
		t, err = lookupTool(f.tool)
	}
	if err != nil {
		return nil, err
	}
	p := &runPlan{tool: t, reading: rd}
	if c, ok := t.(io.Closer); ok {
		p.closeTool = func() { c.Close() }
	}
	if f.parallel < 1 {
		return p, usageError("--parallel must be at least 1, got %d", f.parallel)
	}
	if f.budget <= 0 {
		return p, usageError("--budget must be positive, got %s", f.budget)
	}
	if err := readingFits(rd, t); err != nil {
		return p, err
	}
	if p.net, err = rig.ParseNet(f.net); err != nil {
		return p, usageError("--net: %v", err)
	}
	if f.agent.command != "" {
		p.all, err = agentMatrix(f.matrix)
	} else {
		p.all, err = matrixFor(f.matrix, p.net, f.jump, f.hosts, f.serverFaults)
	}
	if err != nil {
		return p, err
	}
	if err := p.selectCases(f); err != nil {
		return p, err
	}
	if err := rig.CheckHops(p.cases, f.jump); err != nil {
		return p, usageError("%v", err)
	}
	if err := rig.CheckFleet(p.cases, f.hosts, f.jump); err != nil {
		return p, usageError("%v", err)
	}
	if err := rig.CheckFleetTool(p.tool, f.hosts); err != nil {
		return p, usageError("%v", err)
	}
	return p, kernelCutsFit(p.cases, p.net, f.matrix)
}

// kernelCutsFit refuses a case whose cut only the kernel network makes
// when the run is not on it.
func kernelCutsFit(cases []matrix.Case, net rig.Net, file string) error {
	if net == rig.NetKernel {
		return nil
	}
	for _, c := range cases {
		if c.Moment.HasCut() && c.Cut.NeedsKernel() {
			if file == "" {
				file = matrix.DefaultMatrixFile
			}
			return usageError("matrix %s: case %s: cut: %v needs the kernel network: run with --net kernel (docs/network.md)", file, c.ID, c.Cut)
		}
	}
	return nil
}

// selectCases selects the plan's matrix and step cases, its repeats and
// its shard, and checks that some selected case can run against the tool.
func (p *runPlan) selectCases(f runFlags) error {
	cases, steps, err := matrix.SplitSelection(p.all, matrix.SplitGlobs(f.cases))
	if err != nil {
		return usageError("%v", err)
	}
	// A glob no step case can match stops the run here, before the
	// target, the run directory and the preflight (selection.go).
	if err := stepGlobsCanMatch(steps.Required); err != nil {
		return err
	}
	if f.jump || f.hosts > 1 {
		// Step cases are made from one host's conversation, reached directly.
		if len(steps.Required) > 0 {
			return usageError("--cases %s: step cases are not made behind a jump host or on a fleet: leave them out of a run with --jump or --hosts", strings.Join(steps.Required, ","))
		}
		steps = matrix.StepSelection{}
	}
	stepsOnly := len(cases) == 0 && len(steps.Required) > 0
	if len(cases) == 0 && !stepsOnly {
		return usageError("no cases selected")
	}
	rp, err := f.repeat.options(cases)
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
	if p.reading != nil && (rp.On() || shard != nil) {
		return usageError("--reading: %v", strings.TrimPrefix(rig.ErrReadingOneRun.Error(), "rig: "))
	}
	applicable, why := 0, ""
	if stepsOnly {
		applicable = 1 // step cases are judged after the preflight
	}
	for _, c := range cases {
		if ok, reason := matrix.Applies(c, p.tool); ok {
			applicable++
		} else {
			why = reason
		}
	}
	if applicable == 0 {
		return usageError("none of the %d selected cases can run against %s: %s", len(cases), p.tool.Name(), why)
	}
	p.cases, p.steps, p.repeat, p.shard = cases, steps, rp, shard
	return nil
}

// finishRun turns a run's outcome into the terminal's results, the
// report's other forms and the exit code.
func finishRun(cmd *cobra.Command, f runFlags, p *runPlan, dirPath string, rep *report.Report, runErr error) error {
	stderr := cmd.ErrOrStderr()
	var pre *report.PreflightError
	if errors.As(runErr, &pre) {
		return rigError(fmt.Errorf("%v\n  the tool cannot run a case with no fault, so no case can be judged; see %s",
			pre, dirPath+"/report.json"))
	}
	var sel *matrix.SelectionError
	if errors.As(runErr, &sel) {
		return usageError("%v", sel)
	}
	if errors.Is(runErr, rig.ErrInterrupted) && rep != nil {
		out := cmd.OutOrStdout()
		writeResults(out, rep)
		fmt.Fprintf(out, "report: %s\n", dirPath+"/report.json")
		writeNext(out, dirPath, rep)
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: the report holds the %d case run(s) judged before the stop, marked interrupted", rep.Summary.Cases)}
	}
	if runErr != nil {
		return rigError(runErr)
	}
	out := cmd.OutOrStdout()
	writeResults(out, rep)
	if rep.CasesOnDisk && (f.junit != "" || os.Getenv("GITHUB_ACTIONS") == "true") {
		// A repeated run kept its case runs in report.json only; JUnit and
		// the annotations list them, so read them back now the run is over.
		full, err := report.ReadReport(dirPath)
		if err != nil {
			return rigError(err)
		}
		rep = full
	}
	fmt.Fprintf(out, "report: %s\n", dirPath+"/report.json")
	writeNext(out, dirPath, rep)
	ciOutput(out, stderr, rep, f.matrix, p.all) // ci.go: GitHub Actions annotations and summary
	if f.junit != "" {
		if err := writeJUnit(f.junit, rep); err != nil {
			fmt.Fprintf(stderr, "sshrig: --junit: %v\n", err)
		}
	}
	return verdictExit(rep, f.repeat.failure(rep), p.tool.Name())
}

// writeJUnit writes the report's JUnit XML to path.
func writeJUnit(path string, rep *report.Report) error {
	b, err := rep.JUnit()
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	return err
}

// verdictExit is the exit of a run (or a merge of shards) that judged its
// cases: failure (exit 1, or nil) unless nothing ran (2), then 3 for an
// inconclusive case.
func verdictExit(rep *report.Report, failure error, toolName string) error {
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

// openReading loads --reading; nil without one.
func (f runFlags) openReading() (*reading.Reading, error) {
	if f.reading == "" {
		return nil, nil
	}
	rd, err := reading.Open(f.reading)
	if err != nil {
		return nil, usageError("--reading: %v", err)
	}
	return rd, nil
}

// readingFits checks that the reading reads the kind of tool t is: an
// exec: tool's exit code and output, or an MCP tool's answer.
func readingFits(rd *reading.Reading, t tool.Tool) error {
	if rd == nil {
		return nil
	}
	kind := reading.Kind("")
	switch {
	case mcptool.IsSpec(t.Name()):
		kind = reading.MCP
	case strings.HasPrefix(t.Name(), tools.ExternalPrefix):
		kind = reading.Exec
	default:
		return usageError("--reading reads the report of an exec: or MCP tool that speaks no result contract; %s is neither", t.Name())
	}
	if rd.Kind != kind {
		return usageError("--reading: %s reads %s tools, and %s is an %s tool", rd.Name, rd.Kind, t.Name(), kind)
	}
	return nil
}

// writeNext ends a run with its directory and the commands that come next.
func writeNext(w io.Writer, dir string, rep *report.Report) {
	fmt.Fprintf(w, "run directory: %s\n", dir)
	fmt.Fprintf(w, "next: sshrig report %s          (the HTML page: summary, filters, timelines)\n", dir)
	if id := rep.FirstFailure(); id != "" {
		fmt.Fprintf(w, "      sshrig replay %s %s   (the first failing case, again)\n", dir, id)
	}
}
