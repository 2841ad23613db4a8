package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/report/htmlreport"
)

func newReportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report RUN_DIR…",
		Short: "Write one self-contained HTML report of run directories: rates side by side, a timeline per case run",
		Long: `report reads each run directory (report.json, and events.jsonl, which it
verifies) and writes one HTML file that needs nothing else: no network, no
CDN. Per case it shows the failure rate of every run given, side by side (give
several nights to see a trend); per case run a timeline in lanes (tool,
an agent's calls for 'sshrig agent', cutter, server, remote command, probes)
with the moment, the cut, the
markers, the result and the verdict. A log that does not verify is flagged
on the page. The page opens on a summary: counts, a moment x cut grid per
disposition, the violations by rule, and the cases failing first, with
filters and a search. Without -o it is written as report.html in the first
run directory; the path is printed on stderr.`,
		Example: `  sshrig report sshrig-runs/latest
  sshrig report sshrig-runs/night1 sshrig-runs/night2 -o nightly.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var runs []*htmlreport.Run
			for _, dir := range args {
				r, err := htmlreport.Load(dir)
				if err != nil {
					return usageError("%s: %v", dir, err)
				}
				if r.Verified != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "sshrig: %s: the event log does not verify: %s\n", dir, r.Verified)
				}
				runs = append(runs, r)
			}
			var b bytes.Buffer
			if err := htmlreport.Write(&b, runs); err != nil {
				return rigError(err)
			}
			path := out
			if path == "" {
				path = filepath.Join(args[0], htmlreport.FileName)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				return rigError(err)
			}
			runsWord := "runs"
			if len(runs) == 1 {
				runsWord = "run"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "report: %s (%d %s, %d bytes)\n", path, len(runs), runsWord, b.Len())
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to write (default: "+htmlreport.FileName+" in the first run directory)")
	return cmd
}
