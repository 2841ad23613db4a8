package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
)

func newMergeCmd() *cobra.Command {
	var out, junit, matrix string
	var maxRate float64
	cmd := &cobra.Command{
		Use:   "merge SHARD_DIR…",
		Short: "Merge the run directories of a sharded run into one run directory of the whole",
		Long: `merge reads the run directories of every shard of one run (sshrig run --shard
I/N), verifies each one's event log against the head its report recorded (as
sshrig verify does), checks that they are every shard of one selection exactly
once, and writes one run directory: report.json with the summary and rates of
the whole, an event log that re-chains every shard's entries, the transcripts,
and junit.xml when the shards wrote JUnit. It prints the table and summary a
single run would.

Exit codes, as sshrig run's: 0 every case passed, 1 a verdict failed (or, for a
repeated run, a rate above --max-failure-rate) or a shard's event log is
tampered, 2 bad usage or input (a directory that is no shard, shards of
different runs, a shard given twice or missing), 3 a shard's preflight failed
or a case was inconclusive.`,
		Example: `  sshrig merge shard-1 shard-2 shard-3 --out merged`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxRate < 0 || maxRate >= 1 {
				return usageError("--max-failure-rate must be a proportion in [0, 1), got %g", maxRate)
			}
			for _, d := range args {
				if _, err := os.Stat(filepath.Join(d, report.ReportFile)); err != nil {
					return usageError("merge: %v", err)
				}
			}
			cases, err := loadMatrix(matrix)
			if err != nil {
				return err
			}
			dir, dirPath, err := createRunDir(out)
			if err != nil {
				return err
			}
			rep, err := rig.Merge(dir, args)
			if cerr := dir.Close(); cerr != nil && err == nil {
				err = cerr
			}
			if err != nil {
				os.RemoveAll(dirPath) // nothing of a refused merge is kept
				return mergeError(err)
			}
			w := cmd.OutOrStdout()
			writeResults(w, rep)
			fmt.Fprintf(w, "merged %d shards: %s\n", len(rep.Merged), dirPath+"/report.json")
			ciOutput(w, cmd.ErrOrStderr(), rep, matrix, cases)
			if junit == "" && rep.WroteJUnit {
				junit = filepath.Join(dirPath, "junit.xml")
			}
			if junit != "" {
				if err := writeJUnit(junit, rep); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "sshrig: --junit: %v\n", err)
				}
			}
			if !cmd.Flags().Changed("max-failure-rate") && rep.Repeat != nil {
				maxRate = rep.Repeat.MaxFailureRate
			}
			return verdictExit(rep, failureExit(rep, maxRate), rep.Tool)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "run directory for the merged run (default: a new dated directory under ./sshrig-runs/)")
	fl.StringVar(&junit, "junit", "", "write JUnit XML of the whole here (default: junit.xml in the run directory when the shards wrote JUnit)")
	fl.StringVar(&matrix, "matrix", "", "the matrix file the shards ran, if not the default matrix (annotations point at its cases)")
	fl.Float64Var(&maxRate, "max-failure-rate", 0, "for a repeated run: exit 1 only when some case's failure rate is above this proportion (default: the shards' own --max-failure-rate)")
	return cmd
}

// mergeError is a refused merge's exit: 1 for a tampered log, 3 for a
// failed preflight, 2 for anything else (the input does not make one run).
func mergeError(err error) error {
	var tampered *rig.TamperedError
	var pre *report.PreflightError
	var shards *rig.ShardsError
	switch {
	case errors.As(err, &shards):
		return usageError("merge: %s", shards.Reason)
	case errors.As(err, &tampered):
		return &exitError{code: exitFail, err: err}
	case errors.As(err, &pre):
		return rigError(err)
	}
	return usageError("merge: %v", err)
}
