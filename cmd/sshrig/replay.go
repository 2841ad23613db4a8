package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/rig"
)

func newReplayCmd() *cobra.Command {
	var matrix, out string
	var tf targetFlags
	cmd := &cobra.Command{
		Use:   "replay RUN_DIR CASE_RUN",
		Short: "Run one recorded case run again, with the same draws, and say whether its verdict reproduced",
		Long: `replay reads RUN_DIR/report.json, finds the case run CASE_RUN (as the report
and the rates table name it, "started.reset.survive#7", or its correlation
id), and runs that case again with the same tool, budget and case run seed,
so the tool and any perturbation draw what they drew then. It prints both
verdicts and writes a run directory of its own.

Exit codes: 0 the verdict reproduced, 1 it did not, 2 bad usage or input,
3 the rig could not run.`,
		Example: `  sshrig replay sshrig-runs/latest 'started.reset.survive#7'`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := rig.ReadReport(args[0])
			if err != nil {
				return usageError("%v", err)
			}
			cases, err := loadMatrix(matrix)
			if err != nil {
				return err
			}
			c, was, err := rig.ReplayCase(rep, cases, args[1])
			if err != nil {
				return usageError("%v", err)
			}
			t, err := lookupTool(rep.Tool)
			if err != nil {
				return err
			}
			budget, err := time.ParseDuration(rep.Budget)
			if err != nil {
				return usageError("%s: budget %q: %v", args[0], rep.Budget, err)
			}
			if !cmd.Flags().Changed("target") {
				tf.target = rep.Target
			}
			target, err := tf.rigTarget(cmd, true)
			if err != nil {
				return err
			}
			dir, dirPath, err := createRunDir(out)
			if err != nil {
				return err
			}
			o := rig.Options{Tool: t, Cases: []rig.Case{c}, Parallel: 1, Budget: budget, Target: target, Out: dir}
			// rig writes the run directory's report.json.
			now, runErr := rig.Run(cmd.Context(), o)
			if err := dir.Close(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "sshrig: run directory: %v\n", err)
			}
			var pre *rig.PreflightError
			if errors.As(runErr, &pre) {
				return rigError(fmt.Errorf("%v; see %s", pre, dirPath+"/report.json"))
			}
			if runErr != nil {
				return rigError(runErr)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "replayed %s (tool %s, seed %s) as %s\n", was.RunName(), rep.Tool, seedOf(was), now.Cases[0].CorrelationID)
			ok, why := rig.Reproduced(was, now.Cases[0])
			fmt.Fprintln(w, why)
			fmt.Fprintf(w, "report: %s\n", dirPath+"/report.json")
			if !ok {
				return &exitError{code: exitFail, err: errors.New("the verdict did not reproduce")}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&matrix, "matrix", "", "the matrix file the run used, if not the default matrix")
	fl.StringVar(&out, "out", "", "run directory for the replay (default: a new dated directory under ./sshrig-runs/)")
	tf.register(fl)
	return cmd
}

func seedOf(c rig.CaseReport) string {
	if c.Draw == nil {
		return "none"
	}
	return fmt.Sprint(c.Draw.Seed)
}
