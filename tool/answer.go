package tool

import (
	"context"
	"io"
	"time"
)

// Finding is something wrong with how a tool answered that its result
// contract alone cannot show: an MCP server whose isError contradicts the
// contract's ok, or that died during the call. Assertion and Rule name it as
// the verdict does (internal/verdict).
type Finding struct {
	Assertion string
	Rule      string
	Detail    string
}

// Answer is what a tool that speaks a protocol of its own (MCP) reports
// besides the result it printed on stdout.
type Answer struct {
	Findings []Finding
	// Shown is everything else the tool's caller is shown (every MCP
	// content item), checked for secrets as the result is.
	Shown []byte
	// Call is the MCP tool result as its caller saw it, for a reading of a
	// tool that speaks no result contract; nil when no result came.
	Call *CallResult
	// Agent, for an agent under test, is what the rig's MCP server saw of
	// its run; nil for every other tool.
	Agent *AgentRun
}

// CallResult is an MCP CallToolResult in the terms a reading reads.
type CallResult struct {
	IsError bool
	// Structured is structuredContent decoded from JSON; nil when absent.
	Structured any
	// Text is every text content item, joined by newlines.
	Text string
}

// Answerer is implemented by tools that return an Answer with each run. The
// rig calls RunAnswer instead of Run and waits for it to return even when it
// gives up on the tool: RunAnswer must return promptly once ctx is done.
type Answerer interface {
	Tool
	RunAnswer(ctx context.Context, t Target, stdout, stderr io.Writer) Answer
}

// Preflighter is implemented by tools with checks of their own to pass before
// the rig's no-fault preflight case (an MCP server must start and list its
// tool). The error names the state that failed.
type Preflighter interface {
	Tool
	Preflight(ctx context.Context) error
}

// AgentRun is an agent under test's run (internal/agentrun) as the rig's
// own MCP server saw it: every call the agent made, in order, and what the
// person the rig plays answered.
type AgentRun struct {
	Calls []AgentCall `json:"calls"`
	// Prompts counts the approvals the agent asked the person for.
	Prompts int `json:"prompts"`
	// DeniedAt is when the person first refused an approval, or let it go
	// unanswered; zero when neither happened. Nothing of the case may reach
	// the SSH server after it.
	DeniedAt time.Time `json:"denied_at,omitzero"`
	// Answers are the final answers, one per agent process, as printed.
	Answers []string `json:"answers"`
}

// AgentCall is one MCP tool call of an agent under test.
type AgentCall struct {
	Process int    `json:"process"` // 1 for the first agent process of the case
	Tool    string `json:"tool"`
	// Changes: the tool changes something on the host (create, note, run),
	// whether or not this call ran.
	Changes   bool      `json:"changes,omitempty"`
	Arguments string    `json:"arguments"` // as sent, JSON
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	IsError   bool      `json:"is_error"`
	// Result is the structuredContent the agent got, JSON.
	Result string `json:"result"`
	// Refused says why the rig's tool ran nothing over SSH for the call
	// (no approval, a denial, the call limit); "" when it did run.
	Refused string `json:"refused,omitempty"`
}

// OneHost is implemented by a tool that runs on one host only (the built-in
// mutants): its result has no hosts, so a fleet run (--hosts) cannot judge
// it, and the rig says so before it starts.
type OneHost interface {
	OneHostOnly()
}

// Settled is implemented by a tool whose run depends on settings besides
// its name (an agent's limits): the report keeps them, so a replay runs
// the tool as the run did.
type Settled interface {
	Settings() map[string]string
}

// Agent is implemented by an agent under test (sshrig agent): a program
// that drives the rig's own MCP tools, and the only kind of tool a person
// can be asked for approvals by (Target.Approval).
type Agent interface {
	Answerer
	DrivesRigTools()
}
