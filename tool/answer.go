package tool

import (
	"context"
	"io"
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
