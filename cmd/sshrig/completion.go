package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// Shell completion (sshrig completion bash|zsh|fish|powershell, docs/cli.md):
// the values a flag or argument can take, each with a description where the
// shell shows one.

// completeRunFlags registers the completions of run's flags.
func completeRunFlags(cmd *cobra.Command) {
	cmd.RegisterFlagCompletionFunc("tool", completeTool)
	cmd.RegisterFlagCompletionFunc("cases", completeCases)
	completeTargetFlags(cmd)
	cmd.RegisterFlagCompletionFunc("mcp-session", fixedChoices("fresh\ta server or session per case", "shared\tone for the whole run"))
}

// completeTargetFlags registers --target's values (run, reconcile, replay).
func completeTargetFlags(cmd *cobra.Command) {
	cmd.RegisterFlagCompletionFunc("target", fixedChoices("embedded\tthe SSH server in this process", "container\ta disposable Docker container (docs/containers.md)"))
}

// fixedChoices completes from choices ("value\tdescription") those that
// begin with what is typed.
func fixedChoices(choices ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, c := range choices {
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// toolChoices are the built-in tools, each with what it gets wrong, and the
// prefixes of an external program and an MCP server.
func toolChoices() []string {
	var out []string
	for _, b := range tools.Builtins() {
		out = append(out, b.Name+"\t"+b.Defect)
	}
	return append(out,
		"exec:\tan external program: exec:COMMAND ARGS… (docs/tool-contract.md)",
		"mcp:\tan MCP server over stdio: mcp:COMMAND ARGS… (docs/mcp.md)",
		"mcp+http://\tan MCP server over streamable HTTP (docs/mcp.md)")
}

func completeTool(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if strings.HasPrefix(toComplete, "exec:") {
		// The program's path: the shell completes files after the prefix.
		return nil, cobra.ShellCompDirectiveDefault
	}
	return fixedChoices(toolChoices()...)(nil, nil, toComplete)
}

// completeCases completes the last glob of --cases' comma-separated list
// with the ids and aliases of the matrix (--matrix's, if given) and the
// step cases' glob.
func completeCases(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cases := matrix.DefaultMatrix()
	if path, _ := cmd.Flags().GetString("matrix"); path != "" {
		m, err := matrix.LoadMatrixFile(path)
		if err != nil {
			return cobra.AppendActiveHelp(nil, err.Error()), cobra.ShellCompDirectiveNoFileComp
		}
		cases = m
	}
	done, last := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	var out []cobra.Completion
	add := func(v, desc string) {
		if strings.HasPrefix(v, last) {
			out = append(out, done+v+"\t"+desc)
		}
	}
	for _, c := range cases {
		add(c.ID, c.Notes)
		if c.Alias != "" {
			add(c.Alias, c.ID)
		}
	}
	add(matrix.StepCasePrefix+"*", "the step cases of the tool's conversation, made by the preflight")
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeReplayArgs completes replay's RUN_DIR (a directory) and CASE_RUN
// (the case run names of that run's report, with their verdicts).
func completeReplayArgs(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return nil, cobra.ShellCompDirectiveFilterDirs
	case 1:
		rep, err := report.ReadReport(args[0])
		if err != nil {
			return cobra.AppendActiveHelp(nil, err.Error()), cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, c := range rep.Cases {
			if name := c.RunName(); strings.HasPrefix(name, toComplete) {
				out = append(out, name+"\t"+string(c.Verdict))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}
