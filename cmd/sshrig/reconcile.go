package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/reconcile/score"
	"github.com/sshrig/sshrig/rig"
)

type reconcileFlags struct {
	probe        string
	remote       bool
	operation    string
	probeTimeout time.Duration
	out          string
	json         string
	quiet        bool
	targetFlags
}

func newReconcileCmd() *cobra.Command {
	var f reconcileFlags
	var ops strings.Builder
	for _, o := range score.Operations() {
		fmt.Fprintf(&ops, "  %-16s %s\n", o.Name, o.Summary)
		if o.Example != "" {
			fmt.Fprintf(&ops, "  %-16s (example probe: %s)\n", "", o.Example)
		}
	}
	cmd := &cobra.Command{
		Use:   "reconcile --probe COMMAND",
		Short: "Score a reconciliation probe against every remote state, produced for real",
		Long: `reconcile scores a reconciliation probe (the command a tool runs to learn
what became of an attempt before it retries) against the truth. For the
operation, the rig produces each remote state for real, one case run each with
a fresh correlation id, checks with its own truth that it produced it, and
runs the probe:

  never-started       cut at exec (reset), hangup: the command never ran
  started-and-killed  the server kills it right after its start marker
  still-running       it is under way while the probe runs
  completed-0         it ran and exited 0
  completed-nonzero   it ran and exited non-zero
  executed-twice      the same command ran twice for the id

By default the probe runs here, under /bin/sh -c, with the SSHRIG_*
environment of an external tool (docs/tool-contract.md; SSHRIG_CORRELATION_ID
is the state's id) plus SSHRIG_LEDGER, the ledger's path on the target, so
it can reach the target itself. With --remote it runs on the target, over a
fresh SSH session, with SSHRIG_CORRELATION_ID, SSHRIG_OPERATION and
SSHRIG_LEDGER set. Either way it prints one JSON object on stdout:

  {"state": "not_started|in_progress|completed|failed|duplicated|unknown", "evidence": "..."}

The right answers: never-started not_started, started-and-killed failed,
still-running in_progress, completed-0 completed, completed-nonzero failed,
executed-twice duplicated. "unknown" is allowed but counted as weak. A probe
that hangs (--probe-timeout), crashes or prints anything else gets a finding;
nothing it started is left running. The confusion matrix (truth by answer)
names every wrong cell. See docs/reconcile.md.

Operations (--operation):
` + ops.String() + `
Exit codes: 0 every answer right (weak unknowns allowed), 1 a wrong answer,
no answer or a finding, 2 bad usage, 3 the rig could not produce the states.`,
		Example: `  sshrig reconcile --probe docs/examples/reconcile-markers.sh
  sshrig reconcile --remote --probe "$(cat docs/examples/reconcile-markers.sh)"
  sshrig reconcile --operation restart_service --probe docs/examples/reconcile-restart.sh
  sshrig reconcile --probe ./my-probe --json reconcile.json --target container`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReconcile(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.probe, "probe", "", "the reconciliation probe: a shell command line (required)")
	fl.BoolVar(&f.remote, "remote", false, "run the probe on the target over SSH instead of on this machine")
	fl.StringVar(&f.operation, "operation", score.DefaultOperation, "the operation whose states are produced (valid: "+strings.Join(score.OperationNames(), ", ")+")")
	f.targetFlags.register(fl)
	completeTargetFlags(cmd) // completion.go
	fl.DurationVar(&f.probeTimeout, "probe-timeout", score.DefaultProbeTimeout, "deadline of each probe run; a probe still running then hangs and is killed")
	fl.StringVar(&f.out, "out", "", "run directory (default: a new dated directory under ./sshrig-runs/)")
	fl.StringVar(&f.json, "json", "", "also write the JSON report to this file")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no per-state progress on stderr")
	return cmd
}

func runReconcile(cmd *cobra.Command, f reconcileFlags) error {
	if strings.TrimSpace(f.probe) == "" {
		return usageError("reconcile: --probe COMMAND is required (for example --probe docs/examples/reconcile-markers.sh)")
	}
	if f.probeTimeout <= 0 {
		return usageError("--probe-timeout must be positive, got %s", f.probeTimeout)
	}
	op, err := score.LookupOperation(f.operation)
	if err != nil {
		return usageError("--operation: %v", err)
	}
	target, err := f.rigTarget(cmd, f.quiet)
	if err != nil {
		return err
	}

	dir, dirPath, err := createRunDir(f.out)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	o := rig.ReconcileOptions{Target: target, Out: dir, Score: score.Options{
		Probe:        f.probe,
		Remote:       f.remote,
		Operation:    &op,
		ProbeTimeout: f.probeTimeout,
	}}
	if !f.quiet {
		o.Score.Progress = stderr
		fmt.Fprintf(stderr, "sshrig: reconcile: operation %s, target %s, run directory %s\n", op.Name, f.target, dirPath)
	}
	rep, runErr := rig.Reconcile(cmd.Context(), o) // writes report.json, head included
	if rep != nil && f.json != "" {
		if b, err := rep.JSON(); err == nil {
			writeJSONCopy(stderr, f.json, b)
		}
	}
	if err := dir.Close(); err != nil {
		fmt.Fprintf(stderr, "sshrig: run directory: %v\n", err)
	}
	var pre *score.PreflightError
	if errors.As(runErr, &pre) {
		return rigError(fmt.Errorf("%v\n  no state can be produced, so the probe was not run; see %s", pre, dirPath+"/report.json"))
	}
	if runErr != nil {
		return rigError(runErr)
	}
	out := cmd.OutOrStdout()
	rep.WriteText(out)
	fmt.Fprintln(out, rep.SummaryLine())
	fmt.Fprintf(out, "report: %s\n", dirPath+"/report.json")
	switch s := rep.Summary; {
	case s.Failed():
		return &exitError{code: exitFail, err: errors.New("")}
	case s.Inconclusive > 0:
		return rigError(fmt.Errorf("%d state(s) not produced: the rig could not establish what it needed, so the probe was not scored there", s.Inconclusive))
	}
	return nil
}
