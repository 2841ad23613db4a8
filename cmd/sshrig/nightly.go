package main

import "github.com/spf13/cobra"

// nightlyCommands are the commands for repeated runs and their reports
// (docs/nightly.md).
func nightlyCommands() []*cobra.Command {
	return []*cobra.Command{newReplayCmd(), newReportCmd(), newMergeCmd()}
}
