package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/rig/htmlreport"
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
cutter, server, remote command, probes) with the moment, the cut, the
markers, the result and the verdict. A log that does not verify is flagged
on the page.`,
		Example: `  sshrig report sshrig-runs/night1 sshrig-runs/night2 -o nightly.html`,
		Args:    cobra.MinimumNArgs(1),
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
			if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
				return rigError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s (%d runs, %d bytes)\n", out, len(runs), b.Len())
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "sshrig-report.html", "the HTML file to write")
	return cmd
}
