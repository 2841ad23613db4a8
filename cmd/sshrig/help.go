package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagGroupKey is the annotation that puts a flag in a group of --help.
const flagGroupKey = "sshrig_group"

// flagGroup is a section of a command's --help: the basics come first,
// under "Flags:", then the others in this order.
type flagGroup struct {
	id, title string
	flags     []string
}

var flagGroups = []flagGroup{
	{"", "Flags", nil},
	{"nightly", "Nightly runs: repeats, rates, slow links, shards (docs/nightly.md)",
		[]string{"repeat", "for", "seed", "max-failure-rate", "link", "answer-delay", "shard", "shards"}},
	{"mcp", "MCP servers under test (docs/mcp.md)", []string{"mcp-tool", "mcp-args", "mcp-session"}},
	{"containers", "Where the server runs (docs/containers.md)", []string{"target", "image", "server-binary", "run-id"}},
	{"server", "The server and diagnostics", []string{"refuse-pty", "log-commands", "memprofile"}},
}

// groupFlags sorts cmd's flags into flagGroups for its --help, the basics
// first; a flag no group names stays with the basics.
func groupFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	for _, g := range flagGroups {
		for _, name := range g.flags {
			if fl.Lookup(name) != nil {
				fl.SetAnnotation(name, flagGroupKey, []string{g.id})
			}
		}
	}
	cmd.SetUsageTemplate(strings.Replace(cmd.UsageTemplate(),
		"\nFlags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}",
		"{{groupedFlagUsages .LocalFlags}}", 1))
}

func init() {
	cobra.AddTemplateFunc("groupedFlagUsages", groupedFlagUsages)
}

// groupedFlagUsages is the flags' usage, a section per group that has any.
func groupedFlagUsages(flags *pflag.FlagSet) string {
	var b strings.Builder
	for _, g := range flagGroups {
		set := pflag.NewFlagSet(g.id, pflag.ContinueOnError)
		flags.VisitAll(func(f *pflag.Flag) {
			id := ""
			if v := f.Annotations[flagGroupKey]; len(v) > 0 {
				id = v[0]
			}
			if id == g.id {
				set.AddFlag(f)
			}
		})
		if set.HasFlags() {
			b.WriteString("\n" + g.title + ":\n" + strings.TrimRight(set.FlagUsages(), " \n") + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
