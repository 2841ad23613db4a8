package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// RunAnswer implements tool.Answerer: one tools/call for the case. The
// contract it reads from the CallToolResult goes to stdout, as an external
// tool would print it; what happened on the MCP layer, and the server's
// stderr, go to stderr.
func (m *Tool) RunAnswer(ctx context.Context, t tool.Target, stdout, stderr io.Writer) tool.Answer {
	var a tool.Answer
	stderr = &lockedWriter{w: stderr}
	find := func(assertion, rule, format string, args ...any) {
		a.Findings = append(a.Findings, tool.Finding{Assertion: assertion, Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}
	args, err := m.args.Fill(t)
	if err != nil { // ParseArgs proved the template; only a broken target gets here
		fmt.Fprintf(stderr, "mcp: %v\n", err)
		return a
	}
	var s *session
	if m.session == Shared {
		s, err = m.sharedSession(ctx)
	} else {
		s, err = m.open(ctx, t.Environ(), t.Start, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp: %v\n", err)
		var se *StateError
		switch {
		case ctx.Err() != nil:
			find(report.AssertCategory, verdict.RuleMCPNoAnswer, "the server did not get through initialize and tools/list within the budget")
		case errors.As(err, &se) && se.State == "loaded":
			find(report.AssertCategory, verdict.RuleMCPNotListed, "%v", se.Err)
		default:
			find(report.AssertCategory, verdict.RuleMCPServerDied, "%v", err)
		}
		return a
	}
	if m.session != Shared {
		defer func() {
			if left := s.close(); len(left) > 0 {
				find(report.AssertNoBlind, verdict.RuleLeftRunning, "the MCP server left %d process(es) of its group running after it exited (pids %v); the rig killed them", len(left), left)
			}
		}()
	} else if s.stderr != nil {
		defer func() { stderr.Write(s.stderr.take()) }()
	}
	fmt.Fprintf(stderr, "mcp: tools/call %s\n", m.name)
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: m.name, Arguments: args})
	if err != nil {
		fmt.Fprintf(stderr, "mcp: tools/call: %v\n", err)
		rule, detail := m.callFailed(ctx, s, err)
		find(report.AssertCategory, rule, "%s", detail)
		return a
	}
	shown, _ := json.Marshal(res)
	a.Shown = shown
	fmt.Fprintf(stderr, "mcp: isError=%t structuredContent=%t content items=%d\n", res.IsError, res.StructuredContent != nil, len(res.Content))
	a.Call = callResult(res)
	if m.native {
		return a // a reading reads a.Call; there is no contract to check
	}
	contract, findings := read(res, s.listed)
	a.Findings = append(a.Findings, findings...)
	stdout.Write(contract)
	return a
}

// callResult is res in the terms a reading reads.
func callResult(res *mcp.CallToolResult) *tool.CallResult {
	c := &tool.CallResult{IsError: res.IsError, Text: contentText(res)}
	if res.StructuredContent != nil {
		// Through JSON, so it reads as decoded JSON whatever Go type the
		// SDK handed over.
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			var v any
			if json.Unmarshal(b, &v) == nil {
				c.Structured = v
			}
		}
	}
	return c
}

// contentText is every text content item of res, joined by newlines.
func contentText(res *mcp.CallToolResult) string {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// callFailed names why tools/call returned no result.
func (m *Tool) callFailed(ctx context.Context, s *session, err error) (rule, detail string) {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return verdict.RuleMCPRPCError, fmt.Sprintf("tools/call returned JSON-RPC error %d (%s) where a tool result was due: the agent gets no contract to choose a branch on", werr.Code, werr.Message)
	}
	if s.srv != nil {
		if g := s.srv.stdout.Garbage(); g != nil {
			return verdict.RuleMCPGarbage, fmt.Sprintf("the server wrote %q on stdout, which is not JSON-RPC; the session broke and the call got no result", g)
		}
	}
	if ctx.Err() != nil {
		return verdict.RuleMCPNoAnswer, "the server never answered tools/call within the budget (plus grace)"
	}
	if s.srv != nil {
		if end := s.srv.gone(time.Second); end != "" {
			return verdict.RuleMCPServerDied, "the server process ended (" + end + ") during tools/call, without a result"
		}
	}
	return verdict.RuleMCPServerDied, "the connection to the server broke during tools/call: " + err.Error()
}

// errorLike is text that begins the way an error report does.
var errorLike = regexp.MustCompile(`(?i)^\s*(error|err|fatal|failed|failure|exception|traceback|panic|ssh: |dial tcp)\b`)

// read takes the result contract from a CallToolResult: structuredContent
// (checked against the tool's outputSchema when it declares one), else the
// text content. It returns the contract's bytes (or the text, for the
// rig's parser to reject) and what is wrong with the MCP layer.
func read(res *mcp.CallToolResult, listed *mcp.Tool) ([]byte, []tool.Finding) {
	var fs []tool.Finding
	find := func(assertion, rule, format string, args ...any) {
		fs = append(fs, tool.Finding{Assertion: assertion, Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}
	text := contentText(res)
	var contract []byte
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			find(report.AssertCategory, verdict.RuleMCPOutputSchema, "structuredContent does not encode: %v", err)
		}
		contract = b
		if listed != nil && listed.OutputSchema != nil {
			if err := validate(listed.OutputSchema, b); err != nil {
				find(report.AssertCategory, verdict.RuleMCPOutputSchema, "structuredContent does not match the outputSchema the tool declares: %v", err)
			}
		}
	} else {
		contract = []byte(strings.TrimSpace(text))
	}
	r, perr := result.Parse(contract)
	switch {
	case perr == nil:
		if res.IsError == r.OK {
			find(report.AssertCategory, verdict.RuleMCPIsError, "isError is %t but the contract says ok=%t (%s): an agent that reads isError takes the wrong branch", res.IsError, r.OK, r.Category)
		}
	case res.StructuredContent == nil:
		find(report.AssertCategory, verdict.RuleMCPFreeText, "no structuredContent and no result contract in the text content, only %s: the planner would have to interpret a sentence", quote(text))
		if !res.IsError && errorLike.MatchString(text) {
			find(report.AssertCategory, verdict.RuleMCPErrorText, "the text begins like an error (%s) while isError is false: many clients read this as a successful call", quote(text))
		}
	}
	return contract, fs
}

func quote(s string) string {
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	if s == "" {
		return "nothing"
	}
	return fmt.Sprintf("%q", s)
}

// validate checks instance against a declared outputSchema (draft 2020-12
// unless the schema says otherwise).
func validate(schema any, instance []byte) error {
	sb, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sb))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mcp-output-schema.json", doc); err != nil {
		return err
	}
	sch, err := c.Compile("mcp-output-schema.json")
	if err != nil {
		return fmt.Errorf("the declared outputSchema does not compile: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}
