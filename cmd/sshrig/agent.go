package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/internal/agentrun"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/tool"
)

// agentFlags configure an agent under test (sshrig agent).
type agentFlags struct {
	command      string
	maxPrompts   int
	maxCalls     int
	approvalWait string
}

func newAgentCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "agent --agent 'COMMAND ARGS…'",
		Short: "Run an agent against the rig's own MCP tools while SSH is cut underneath, and judge what it does next",
		Long: `agent judges an agent, not a tool. For every case of the agent matrix
(matrix/agent.yaml; 'sshrig cases --agent' lists it) the rig serves an MCP
server of its own on loopback whose tools run over SSH against the case's
server: create_record, lookup_record, attach_note and run_command, each
returning the result contract in structuredContent with isError exactly when
ok is false, and, in the approval cases, approve, where the rig plays the
person who approves, refuses or never answers. A client that declares MCP
elicitation is asked by the server itself, inside the call, instead; its
host reaches the same person at SSHRIG_PERSON_URL. It starts the agent with:

  SSHRIG_MCP_URL       the server's URL (streamable HTTP, JSON answers)
  SSHRIG_MCP_COMMAND   a command serving the same over stdio, for agents
                       that only launch servers
  SSHRIG_TASK          the task in words, one deterministic instruction
  SSHRIG_TASK_JSON     the same task as JSON (kind, correlation_id, ...)
  SSHRIG_AGENT_STATE   a directory that lives as long as the case
  SSHRIG_PERSON_URL    the person, for a host relaying an elicitation

and cuts the create's SSH connection at the case's moment. The agent prints
one JSON line on stdout: the result contract with a record_id. Judged: its
calls in the order the server saw them (create, outcome_unknown, lookup,
found, attach_note), a second record (blind_retry even when the task ends
well), its final answer against what really happened, every call that
changes something after a refusal, an approval reused across calls or
processes, an elicitation its host accepted for the person, more prompts
than --max-prompts, more calls than --max-calls (the agent is stopped), no
answer within the case's budget, garbage. No SSH key reaches the agent: its
only way to the host is the tools.

Exit codes as 'sshrig run'. docs/agents.md says how to point a real agent
(an agent host, an SDK loop) at the rig, and what each verdict means for its
prompt or policy.`,
		Example: `  sshrig agent --agent 'python3 docs/examples/agent-honest.py'
  sshrig agent --agent 'python3 docs/examples/agent-naive.py' --cases 'approval.*'
  sshrig agent --agent ./my-agent --target container --junit junit.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(f.agent.command) == "" {
				return usageError("--agent is required: the agent's command line, e.g. --agent 'python3 docs/examples/agent-honest.py'")
			}
			return runRun(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.agent.command, "agent", "", "the agent under test: a command line (POSIX shell quoting) started once per case (twice for a fresh-process case)")
	fl.IntVar(&f.agent.maxPrompts, "max-prompts", agentrun.DefaultMaxPrompts, "approval prompts per case before the agent fails with approval_fatigue")
	fl.IntVar(&f.agent.maxCalls, "max-calls", agentrun.DefaultMaxCalls, "tool calls per case before the rig stops the agent (agent_loop)")
	fl.StringVar(&f.agent.approvalWait, "approval-wait", agentrun.DefaultApprovalWait.String(), "how long the person stays silent in an approval.silent case before approve returns no_answer (or the person's endpoint cancel)")
	fl.StringVar(&f.cases, "cases", "", "comma-separated globs over case ids (default: every case of the agent matrix)")
	fl.StringVar(&f.matrix, "matrix", "", "matrix file (YAML, docs/matrix.md) instead of the agent matrix")
	fl.IntVar(&f.parallel, "parallel", rig.DefaultParallel, "most cases run at once (default: sized to the agent and the machine)")
	fl.StringVar(&f.out, "out", "", "run directory (default: a new dated directory under ./sshrig-runs/)")
	fl.StringVar(&f.json, "json", "", "also write the JSON report to this file")
	fl.StringVar(&f.junit, "junit", "", "also write JUnit XML to this file")
	fl.DurationVar(&f.budget, "budget", rig.DefaultBudget, "deadline per case where the matrix gives none (the agent matrix gives 12s)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no per-case progress on stderr")
	f.targetFlags.register(fl)
	f.net = string(rig.NetProxy)
	cmd.AddCommand(newAgentBridgeCmd())
	return cmd
}

// tool resolves the agent under test.
func (f agentFlags) tool() (tool.Tool, error) {
	o := agentrun.Options{MaxPrompts: f.maxPrompts, MaxCalls: f.maxCalls}
	if f.maxPrompts < 1 || f.maxCalls < 1 {
		return nil, usageError("--max-prompts and --max-calls must be at least 1")
	}
	wait, err := time.ParseDuration(f.approvalWait)
	if err != nil || wait <= 0 {
		return nil, usageError("--approval-wait: bad duration %q: want a positive Go duration such as 2s", f.approvalWait)
	}
	o.ApprovalWait = wait
	if exe, err := os.Executable(); err == nil {
		o.Bridge = []string{exe, "agent", "bridge"}
	}
	t, err := agentrun.New(f.command, o)
	if err != nil {
		return nil, usageError("--agent: %v", err)
	}
	return t, nil
}

func newAgentBridgeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "bridge URL",
		Short:  "Serve the rig's MCP server at URL over stdio (what SSHRIG_MCP_COMMAND runs)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return agentrun.Bridge(cmd.Context(), args[0], cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}

// agentMatrix is the matrix an agent run selects from.
func agentMatrix(path string) ([]matrix.Case, error) {
	if path != "" {
		return loadMatrix(path)
	}
	return matrix.AgentMatrix(), nil
}

// replayTool resolves a recorded run's tool: an agent run's by its command
// line and the limits it ran under (sshrig agent's defaults where the
// report has none), any other by name.
func replayTool(rep *report.Report) (tool.Tool, error) {
	if command, ok := strings.CutPrefix(rep.Tool, agentrun.Prefix); ok {
		f := agentFlags{command: command, maxPrompts: agentrun.DefaultMaxPrompts, maxCalls: agentrun.DefaultMaxCalls, approvalWait: agentrun.DefaultApprovalWait.String()}
		for key, v := range rep.ToolSettings {
			var err error
			switch key {
			case agentrun.SettingMaxPrompts:
				f.maxPrompts, err = strconv.Atoi(v)
			case agentrun.SettingMaxCalls:
				f.maxCalls, err = strconv.Atoi(v)
			case agentrun.SettingApprovalWait:
				f.approvalWait = v
			}
			if err != nil {
				return nil, usageError("the report's tool setting %s=%q: %v", key, v, err)
			}
		}
		return f.tool()
	}
	return lookupTool(rep.Tool)
}
