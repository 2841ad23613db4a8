package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/internal/mcptool/mcptest"
	"github.com/sshrig/sshrig/internal/procs"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// TestMain runs this binary as a defective server when asked to, and
// otherwise checks that no test leaves a goroutine or a child behind.
func TestMain(m *testing.M) {
	if name := os.Getenv(mcptest.Env); name != "" {
		os.Exit(mcptest.Main(name))
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
		if kids := procs.Children(os.Getpid()); len(kids) > 0 {
			os.Stderr.WriteString("child processes left running\n")
			code = 1
		}
	}
	os.Exit(code)
}

var target = tool.Target{Addr: "127.0.0.1:1", User: "u", Identity: "/nonexistent/key", KnownHosts: "/nonexistent/kh",
	Command: `printf '%s\n' "a \"quoted\" word"`, CorrelationID: "c-1", Operation: "run_workload", Deadline: 2 * time.Second}

func TestArgs(t *testing.T) {
	a, err := ParseArgs("")
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Fill(target)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"addr": "127.0.0.1:1", "host": "127.0.0.1", "port": float64(1), "user": "u",
		"identity": "/nonexistent/key", "known_hosts": "/nonexistent/kh", "command": target.Command,
		"correlation_id": "c-1", "operation": "run_workload", "deadline_ms": float64(2000)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d arguments, want %d: %v", len(got), len(want), got)
	}
	// With a jump host and on a fleet, the default passes them too.
	far := target
	far.Jump, far.Hosts = "u@127.0.0.1:2", []string{"127.0.0.1:1", "127.0.0.1:3"}
	got, _ = a.Fill(far)
	if got["jump"] != far.Jump || got["hosts"] != "127.0.0.1:1 127.0.0.1:3" || len(got) != len(want)+2 {
		t.Errorf("default template with a jump host and a fleet: %v", got)
	}
	custom, err := ParseArgs(`{"target": "{user}@{host}:{port}", "cmd": "{command}", "timeout": {deadline_ms}}`)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = custom.Fill(target)
	if got["target"] != "u@127.0.0.1:1" || got["cmd"] != target.Command || got["timeout"] != float64(2000) {
		t.Errorf("custom template: %v", got)
	}
	for _, bad := range []string{`{"a": {command}}`, `[1]`, `null`, `{"a": 1`} {
		if _, err := ParseArgs(bad); err == nil || !strings.Contains(err.Error(), "template") {
			t.Errorf("ParseArgs(%q) = %v, want an error naming the template", bad, err)
		}
	}
}

func FuzzArgs(f *testing.F) {
	f.Add(DefaultArgs, "echo 'x' \"y\" \\ \n")
	f.Add(`{"c": "{command}{command}"}`, "\u2028<>&")
	f.Fuzz(func(t *testing.T, tmpl, command string) {
		a, err := ParseArgs(tmpl)
		if err != nil {
			return
		}
		tg := target
		tg.Command = command
		if _, err := a.Fill(tg); err != nil && strings.Contains(tmpl, `"{command}"`) && !strings.Contains(tmpl, `{command}{`) {
			// A command is escaped into its string: no command breaks a template that holds it in quotes.
			if !strings.ContainsAny(command, "{}") {
				t.Fatalf("command %q broke template %q: %v", command, tmpl, err)
			}
		}
	})
}

const contract = `{"ok":false,"category":"outcome_unknown","operation":"run_workload","retry":"reconcile_first","correlation_id":"c-1"}`
const okContract = `{"ok":true,"category":"succeeded","operation":"run_workload","retry":"never","correlation_id":"c-1"}`

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

func TestRead(t *testing.T) {
	schema := map[string]any{"type": "object", "required": []any{"ok", "category"},
		"properties": map[string]any{"ok": map[string]any{"type": "boolean"}, "category": map[string]any{"type": "string"}}}
	listed := &mcp.Tool{Name: "ssh_exec", OutputSchema: schema}
	// As a client decodes it: key order is not kept.
	structured := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	canon := func(s string) string {
		if b, err := json.Marshal(structured(s)); err == nil {
			return string(b)
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		res   *mcp.CallToolResult
		rules []string
		out   string
	}{
		{"structured, isError consistent", &mcp.CallToolResult{IsError: true, StructuredContent: structured(contract), Content: text(contract)}, nil, contract},
		{"structured success", &mcp.CallToolResult{StructuredContent: structured(okContract)}, nil, okContract},
		{"contract in text only", &mcp.CallToolResult{IsError: true, Content: text(contract)}, nil, contract},
		{"isError false on a failure", &mcp.CallToolResult{StructuredContent: structured(contract)}, []string{verdict.RuleMCPIsError}, contract},
		{"isError true on success", &mcp.CallToolResult{IsError: true, Content: text(okContract)}, []string{verdict.RuleMCPIsError}, okContract},
		{"raw error text with isError", &mcp.CallToolResult{IsError: true, Content: text("ssh: handshake failed: EOF")}, []string{verdict.RuleMCPFreeText}, "ssh: handshake failed: EOF"},
		{"error text, isError false", &mcp.CallToolResult{Content: text("Error: connection reset by peer")}, []string{verdict.RuleMCPFreeText, verdict.RuleMCPErrorText}, "Error: connection reset by peer"},
		{"a sentence of success", &mcp.CallToolResult{Content: text("Command ran fine.")}, []string{verdict.RuleMCPFreeText}, "Command ran fine."},
		{"no content at all", &mcp.CallToolResult{}, []string{verdict.RuleMCPFreeText}, ""},
		{"structured off its schema", &mcp.CallToolResult{StructuredContent: map[string]any{"ok": "yes"}}, []string{verdict.RuleMCPOutputSchema}, `{"ok":"yes"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, fs := read(tc.res, listed)
			if string(out) != tc.out && string(out) != canon(tc.out) {
				t.Errorf("contract %s, want %s", out, tc.out)
			}
			var rules []string
			for _, f := range fs {
				rules = append(rules, f.Rule)
			}
			if strings.Join(rules, ",") != strings.Join(tc.rules, ",") {
				t.Errorf("findings %v, want rules %v", fs, tc.rules)
			}
		})
	}
}

// self runs this test binary as the named defective server.
func self(t *testing.T, name string, session string) *Tool {
	t.Helper()
	t.Setenv(mcptest.Env, name)
	m, err := New("mcp:"+os.Args[0], Options{Tool: mcptest.ToolName, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestPreflightStates(t *testing.T) {
	for _, tc := range []struct{ server, state, says string }{
		{"no-init", "installed", "did not initialise"},
		{"lists-other", "loaded", `resolves 0 tools named "ssh_exec" (the server lists only run_command)`},
		{"call-fails", "", ""}, // listed: invocable is the rig's no-fault case to prove
	} {
		t.Run(tc.server, func(t *testing.T) {
			err := self(t, tc.server, Fresh).Preflight(context.Background())
			if tc.state == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.state+": ") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Preflight = %v, want %s: …%s…", err, tc.state, tc.says)
			}
		})
	}
	if _, err := New("mcp:x", Options{}); err != ErrNoTool {
		t.Errorf("no --mcp-tool: %v", err)
	}
}

// TestDefects: each server's defect is named by its own finding, and no
// process of the server is left once the call returns.
func TestDefects(t *testing.T) {
	for _, tc := range []struct{ server, rule, says string }{
		{"crash", verdict.RuleMCPServerDied, "exit status 2"},
		{"hang", verdict.RuleMCPNoAnswer, "never answered"},
		{"garbage", verdict.RuleMCPGarbage, `"connecting to 127.0.0.1:1 ..."`},
		{"call-fails", verdict.RuleMCPRPCError, "upstream session pool exhausted"},
		{"error-text", verdict.RuleMCPErrorText, "Error: connection reset by peer"},
		{"is-error-lies", verdict.RuleMCPIsError, "isError is false but the contract says ok=false"},
		{"lists-other", verdict.RuleMCPNotListed, "resolves 0 tools"},
	} {
		t.Run(tc.server, func(t *testing.T) {
			m := self(t, tc.server, Fresh)
			// The rig gives up after the budget plus grace; here, after the budget.
			ctx, cancel := context.WithTimeout(context.Background(), target.Deadline)
			defer cancel()
			var stdout, stderr bytes.Buffer
			a := m.RunAnswer(ctx, target, &stdout, &stderr)
			var found *tool.Finding
			for i, f := range a.Findings {
				if f.Rule == tc.rule {
					found = &a.Findings[i]
				}
			}
			if found == nil || !strings.Contains(found.Detail, tc.says) {
				t.Fatalf("findings %+v, want %s saying %q\nstderr:\n%s", a.Findings, tc.rule, tc.says, stderr.String())
			}
			if kids := procs.Children(os.Getpid()); len(kids) > 0 {
				t.Fatalf("server processes left: %v", kids)
			}
		})
	}
}

// TestSharedSurvivesCases: one server answers every call of a Shared run and
// is gone after Close.
func TestSharedSurvivesCases(t *testing.T) {
	m := self(t, "error-text", Shared)
	if err := m.Preflight(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), target.Deadline)
		var stdout, stderr bytes.Buffer
		a := m.RunAnswer(ctx, target, &stdout, &stderr)
		cancel()
		if len(a.Findings) != 2 {
			t.Fatalf("call %d: findings %+v", i, a.Findings)
		}
	}
	if len(procs.Children(os.Getpid())) != 1 {
		t.Fatalf("want the one shared server running, have %v", procs.Children(os.Getpid()))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if kids := procs.Children(os.Getpid()); len(kids) > 0 {
		t.Fatalf("server left after Close: %v", kids)
	}
}

// TestFreshEnvironment: a fresh server gets the case's SSHRIG_* variables,
// so a server that reads its target from its environment works unchanged.
func TestFreshEnvironment(t *testing.T) {
	m := self(t, "env-only", Fresh)
	ctx, cancel := context.WithTimeout(context.Background(), target.Deadline)
	defer cancel()
	var stdout, stderr bytes.Buffer
	a := m.RunAnswer(ctx, target, &stdout, &stderr)
	r, err := result.Parse(stdout.Bytes())
	if err != nil || len(a.Findings) != 0 {
		t.Fatalf("%v %+v\nstdout %s\nstderr %s", err, a.Findings, stdout.String(), stderr.String())
	}
	// 127.0.0.1:1 refuses: the reference client found the address in the environment.
	if r.CorrelationID != target.CorrelationID || r.Category != result.LocalFailure {
		t.Fatalf("result %+v", r)
	}
}

// TestOpenTimeout: a program that never answers initialize fails installed
// once the open timeout is spent, and is not left running.
func TestOpenTimeout(t *testing.T) {
	for _, session := range []string{Fresh, Shared} {
		m, err := New("mcp:sleep 60", Options{Tool: "x", Session: session, OpenTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		err = m.Preflight(context.Background())
		m.Close()
		if err == nil || !strings.Contains(err.Error(), "installed: the server did not initialise: it did not answer initialize in time") {
			t.Fatalf("%s: %v", session, err)
		}
		if kids := procs.Children(os.Getpid()); len(kids) > 0 {
			t.Fatalf("%s: left %v", session, kids)
		}
	}
}

// FuzzRead: whatever text a server answers, reading it never panics, and it
// is either a contract that parses or a free-text finding.
func FuzzRead(f *testing.F) {
	f.Add(contract, true)
	f.Add("Error: EOF", false)
	f.Add(`{"ok":true}`, false)
	f.Add("", true)
	f.Fuzz(func(t *testing.T, s string, isError bool) {
		out, fs := read(&mcp.CallToolResult{IsError: isError, Content: text(s)}, nil)
		_, err := result.Parse(out)
		free := false
		for _, f := range fs {
			free = free || f.Rule == verdict.RuleMCPFreeText
		}
		if (err != nil) != free {
			t.Fatalf("text %q: parse error %v, free-text finding %t", s, err, free)
		}
	})
}

// TestDocsDefaultArgs: the default template docs/mcp.md shows is DefaultArgs.
func TestDocsDefaultArgs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```json\n")
	block, _, _ = strings.Cut(block, "```")
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if !ok || squash(block) != squash(DefaultArgs) {
		t.Fatalf("docs/mcp.md's json block is\n%s\nDefaultArgs is\n%s", block, DefaultArgs)
	}
}
