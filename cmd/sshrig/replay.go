package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reading"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
)

func newReplayCmd() *cobra.Command {
	var matrixFile, out, readingFlag string
	var tf targetFlags
	cmd := &cobra.Command{
		Use:   "replay RUN_DIR CASE_RUN",
		Short: "Run one recorded case run again, with the same draws, and say whether its verdict reproduced",
		Long: `replay reads RUN_DIR/report.json, finds the case run CASE_RUN (as the report
and the rates table name it, "started.reset.survive#7", or its correlation
id), and runs that case again with the same tool, budget, network and case
run seed, so the tool and any perturbation draw what they drew then. It prints both
verdicts and writes a run directory of its own. A run whose tool was read by
a reading is replayed with it (a built-in by its name, or --reading FILE);
its ambiguous_report findings are across the whole run, so the replay of one
case is compared without them.

Exit codes: 0 the verdict reproduced, 1 it did not, 2 bad usage or input,
3 the rig could not run.`,
		Example: `  sshrig replay sshrig-runs/latest 'started.reset.survive#7'`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := report.ReadReport(args[0])
			if err != nil {
				return usageError("%v", err)
			}
			// The network the run had: a kernel run's cases (vanish among
			// them) and cuts are the kernel network's.
			net := rig.NetProxy
			if rep.Net != "" {
				if net, err = rig.ParseNet(rep.Net); err != nil {
					return usageError("%s: %v", args[0], err)
				}
			}
			cases, err := matrixFor(matrixFile, net, rep.Jump, rep.Hosts, false)
			if err != nil {
				return err
			}
			if matrixFile == "" && !rep.Jump && rep.Hosts < 2 {
				// A run with --server-faults ran the server matrix, whose
				// ids no other embedded matrix has.
				cases = append(cases, matrix.ServerMatrix()...)
				cases = append(cases, matrix.AgentMatrix()...) // sshrig agent's
			}
			c, was, err := rig.ReplayCase(rep, cases, args[1])
			if err != nil {
				return usageError("%v", err)
			}
			t, err := replayTool(rep)
			if err != nil {
				return err
			}
			rd, err := replayReading(rep, readingFlag)
			if err != nil {
				return err
			}
			was = withoutRunFindings(was)
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
			o := rig.Options{Tool: t, Cases: []matrix.Case{c}, Parallel: 1, Budget: budget, Target: target, Net: net, Jump: rep.Jump, Hosts: rep.Hosts, Out: dir, Reading: rd}
			// rig writes the run directory's report.json.
			now, runErr := rig.Run(cmd.Context(), o)
			if err := dir.Close(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "sshrig: run directory: %v\n", err)
			}
			var pre *report.PreflightError
			if errors.As(runErr, &pre) {
				return rigError(fmt.Errorf("%v; see %s", pre, dirPath+"/report.json"))
			}
			if runErr != nil {
				return rigError(runErr)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "replayed %s (tool %s, seed %s) as %s\n", was.RunName(), rep.Tool, seedOf(was), now.Cases[0].CorrelationID)
			ok, why := report.Reproduced(was, now.Cases[0])
			fmt.Fprintln(w, why)
			fmt.Fprintf(w, "report: %s\n", dirPath+"/report.json")
			if !ok {
				return &exitError{code: exitFail, err: errors.New("the verdict did not reproduce")}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&matrixFile, "matrix", "", "the matrix file the run used, if not the default matrix")
	fl.StringVar(&out, "out", "", "run directory for the replay (default: a new dated directory under ./sshrig-runs/)")
	fl.StringVar(&readingFlag, "reading", "", "the reading file the run used, when it was not a built-in")
	tf.register(fl)
	cmd.ValidArgsFunction = completeReplayArgs // completion.go
	completeTargetFlags(cmd)
	return cmd
}

func seedOf(c report.CaseReport) string {
	if c.Draw == nil {
		return "none"
	}
	return fmt.Sprint(c.Draw.Seed)
}

// replayReading is the reading the recorded run read its tool with: the
// file given, or the built-in of the recorded name; nil for a tool that
// spoke the result contract.
func replayReading(rep *report.Report, file string) (*reading.Reading, error) {
	switch {
	case file != "":
		rd, err := reading.Open(file)
		if err != nil {
			return nil, usageError("--reading: %v", err)
		}
		return rd, nil
	case rep.Reading == "":
		return nil, nil
	}
	rd, ok := reading.Builtin(rep.Reading)
	if !ok {
		return nil, usageError("the run read its tool with reading %q, which is not a built-in: give its file with --reading FILE", rep.Reading)
	}
	return rd, nil
}

// withoutRunFindings is a recorded case run as its own run would judge it
// alone: without ambiguous_report, which the whole run found across its
// cases (a case that failed on it alone passed on its own evidence).
func withoutRunFindings(c report.CaseReport) report.CaseReport {
	kept := c.Violations[:0:0]
	for _, v := range c.Violations {
		if v.Rule != verdict.RuleAmbiguous {
			kept = append(kept, v)
		}
	}
	if len(kept) < len(c.Violations) && len(kept) == 0 && c.Verdict == report.Fail {
		c.Verdict = report.Pass
	}
	c.Violations = kept
	return c
}
