package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/report"
)

func newVerifyCmd() *cobra.Command {
	var head string
	return withHead(&cobra.Command{
		Use:   "verify RUN_DIR|LOG_FILE",
		Short: "Check a run's hash-chained event log offline",
		Long: `verify recomputes the hash chain of a run's event log (events.jsonl) and names
the first bad line and what is wrong with it: modified, deleted, inserted,
reordered, truncated or malformed. Given a run directory it checks the log
against the head recorded in report.json, so a log cut short at its end is
detected too; given a log file alone it checks the chain, and the head only if
--head is given.

Exit codes: 0 intact, 1 tampered, 2 unreadable.`,
		Example: `  sshrig verify sshrig-runs/20261202-133000.000
  sshrig verify events.jsonl --head 4711:9f86d081…`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			st, err := os.Stat(path)
			if err != nil {
				return usageError("verify: %v", err)
			}
			logPath := path
			if st.IsDir() {
				logPath = filepath.Join(path, eventlog.FileName)
				if head == "" {
					b, err := os.ReadFile(filepath.Join(path, "report.json"))
					switch {
					case errors.Is(err, os.ErrNotExist):
						return usageError("verify: %s has no report.json to take the log's head from; pass --head or verify the log file itself", path)
					case err != nil:
						return usageError("verify: %v", err)
					}
					var rep report.Report
					if err := json.Unmarshal(b, &rep); err != nil {
						return usageError("verify: %s/report.json: %v", path, err)
					}
					head = rep.LogHead
				}
			}
			res, err := eventlog.VerifyFile(logPath, head)
			if err != nil {
				return usageError("verify: %v", err)
			}
			out := cmd.OutOrStdout()
			if res.Problem != nil {
				fmt.Fprintf(out, "tampered: %v\n", res.Problem)
				return &exitError{code: exitFail, err: errors.New("")}
			}
			against := "no recorded head to check its end against"
			if head != "" {
				against = "matches the recorded head"
			}
			fmt.Fprintf(out, "intact: %d lines, head %s (%s)\n", res.Lines, res.Head, against)
			return nil
		},
	}, &head)
}

func withHead(cmd *cobra.Command, head *string) *cobra.Command {
	cmd.Flags().StringVar(head, "head", "", "the log's expected head, seq:hash (default: report.json's log_head for a run directory)")
	return cmd
}
