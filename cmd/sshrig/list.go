package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/rig"
)

func newCasesCmd() *cobra.Command {
	var globs string
	var long bool
	cmd := &cobra.Command{
		Use:   "cases",
		Short: "List the cases of the matrix, one id per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cases, err := rig.Select(rig.DefaultMatrix(), rig.SplitGlobs(globs))
			if err != nil {
				return usageError("%v", err)
			}
			out := cmd.OutOrStdout()
			if !long {
				for _, c := range cases {
					fmt.Fprintln(out, c.ID)
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tMOMENT\tCUT\tDISPOSITION\tEXIT\tKNOWLEDGE")
			for _, c := range cases {
				cut := c.Cut.String()
				if c.Moment.String() == "none" || c.Moment.String() == "refuse" {
					cut = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", c.ID, c.Moment, cut, c.Disposition, c.ExitCode, c.Moment.Knowledge())
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&globs, "cases", "", "comma-separated globs over case ids and aliases")
	cmd.Flags().BoolVarP(&long, "long", "l", false, "one row per case with its moment, cut, disposition and exit code")
	return cmd
}

func newToolsCmd() *cobra.Command {
	var long bool
	return withLong(&cobra.Command{
		Use:   "tools",
		Short: "List the built-in tools, one per line (mutants prefixed mutant:)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if !long {
				for _, n := range tools.Names() {
					fmt.Fprintln(out, n)
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tCAUGHT BY\tDEFECT")
			fmt.Fprintln(tw, "reference\t-\tnone: classifies honestly, with per-phase deadlines")
			for _, m := range tools.Mutants() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name(), m.Catches(), m.Defect())
			}
			return tw.Flush()
		},
	}, &long)
}

func withLong(cmd *cobra.Command, long *bool) *cobra.Command {
	cmd.Flags().BoolVarP(long, "long", "l", false, "with each tool's defect and the assertion that catches it")
	return cmd
}
