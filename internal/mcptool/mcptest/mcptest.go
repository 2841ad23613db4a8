package mcptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Env names the server a test binary runs instead of its tests.
const Env = "SSHRIG_MCPTEST_SERVER"

// HonestCallsEnv, set to N, makes a server answer its first N calls
// honestly before its defect shows: in a shared session the preflight then
// passes, and the cases meet the defect.
const HonestCallsEnv = "SSHRIG_MCPTEST_HONEST_CALLS"

// ToolName is the tool every server here exposes (or fails to).
const ToolName = "ssh_exec"

// Args are the tools/call arguments of the default template.
type Args struct {
	Addr          string `json:"addr"`
	Host          string `json:"host,omitempty"`
	Port          int    `json:"port,omitempty"`
	User          string `json:"user"`
	Identity      string `json:"identity"`
	KnownHosts    string `json:"known_hosts"`
	Command       string `json:"command"`
	CorrelationID string `json:"correlation_id"`
	Operation     string `json:"operation"`
	DeadlineMS    int64  `json:"deadline_ms"`
}

func (a Args) target() tool.Target {
	t := tool.Target{Addr: a.Addr, User: a.User, Identity: a.Identity, KnownHosts: a.KnownHosts, Command: a.Command,
		CorrelationID: a.CorrelationID, Operation: a.Operation, Deadline: time.Duration(a.DeadlineMS) * time.Millisecond}
	if _, err := os.Stat(a.Identity + "-cert.pub"); err == nil {
		t.Certificate = a.Identity + "-cert.pub"
	}
	return t
}

// honest is the reference client's result for a.
func honest(ctx context.Context, a Args) result.Result {
	var out bytes.Buffer
	tools.Reference{}.Run(ctx, a.target(), &out, os.Stderr)
	r, _ := result.Parse(out.Bytes())
	return r
}

type handler = mcp.ToolHandlerFor[Args, any]

// Defects maps each server's name to what is wrong with it.
var Defects = map[string]string{
	"no-init":        "exits before it answers initialize (installed fails)",
	"lists-other":    "lists only a tool of another name (loaded fails: zero tools resolved)",
	"call-fails":     "lists ssh_exec, but tools/call returns a JSON-RPC error (invocable fails)",
	"crash":          "the process exits in the middle of tools/call",
	"hang":           "never answers tools/call",
	"garbage":        "writes a progress line on stdout, the protocol's channel",
	"error-text":     "answers \"Error: …\" as plain text with isError false",
	"is-error-lies":  "returns the honest contract in structuredContent, but isError is always false",
	"replays-last":   "answers each call with the result of the call before it (another correlation id)",
	"key-in-content": "adds a debug text item holding the private key to an honest result",
	"key-in-stderr":  "logs the private key on its stderr",
	"cached-conn":    "keeps one SSH connection for all calls and answers from it after a cut killed it",
	"pool-redials":   "keeps one SSH connection for all calls, whatever address a call names, and dials again only when it is dead",
	"env-only":       "ignores its arguments and reads its target from the SSHRIG_* environment (honest in fresh mode)",
}

// Names lists the servers, sorted.
func Names() []string {
	var ns []string
	for n := range Defects {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Main runs the server called name on stdin/stdout and returns the exit code.
func Main(name string) int {
	if _, ok := Defects[name]; !ok {
		fmt.Fprintf(os.Stderr, "mcptest: no server %q (have %v)\n", name, Names())
		return 2
	}
	if name == "no-init" {
		fmt.Fprintln(os.Stderr, "mcptest: no-init: configuration missing, exiting")
		return 1
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest-" + name, Version: "1"}, nil)
	toolName := ToolName
	if name == "lists-other" {
		toolName = "run_command"
	}
	h := handlers[name]
	if n, err := strconv.Atoi(os.Getenv(HonestCallsEnv)); err == nil && n > 0 {
		h = honestFirst(n, h)
	}
	mcp.AddTool(s, &mcp.Tool{Name: toolName, Description: Defects[name]}, h)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		return 1
	}
	return 0
}

var handlers = map[string]handler{
	"lists-other": func(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		return nil, honest(ctx, a), nil
	},
	"call-fails": func(context.Context, *mcp.CallToolRequest, Args) (*mcp.CallToolResult, any, error) {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream session pool exhausted"}
	},
	"crash": func(context.Context, *mcp.CallToolRequest, Args) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "mcptest: crash: panic: nil map")
		os.Exit(2)
		return nil, nil, nil
	},
	"hang": func(context.Context, *mcp.CallToolRequest, Args) (*mcp.CallToolResult, any, error) {
		select {} // ignores its context too
	},
	"garbage": func(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stdout, "connecting to", a.Addr, "...")
		return nil, honest(ctx, a), nil
	},
	"error-text": func(context.Context, *mcp.CallToolRequest, Args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Error: connection reset by peer"}}}, nil, nil
	},
	"is-error-lies": func(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: false}, honest(ctx, a), nil
	},
	"cached-conn": cachedConn,
	"env-only": func(ctx context.Context, _ *mcp.CallToolRequest, _ Args) (*mcp.CallToolResult, any, error) {
		t, err := tool.FromEnv(os.Getenv)
		if err != nil {
			return nil, nil, err
		}
		var out bytes.Buffer
		tools.Reference{}.Run(ctx, t, &out, os.Stderr)
		r, _ := result.Parse(out.Bytes())
		return &mcp.CallToolResult{IsError: !r.OK}, r, nil
	},
	"pool-redials": func(ctx context.Context, req *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		cacheMu.Lock()
		if cached != nil {
			if _, _, err := cached.SendRequest("keepalive@openssh.com", true, nil); err != nil {
				cached.Close()
				cached = nil
			}
		}
		cacheMu.Unlock()
		return cachedConn(ctx, req, a)
	},
	"replays-last": func(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		r := honest(ctx, a)
		lastMu.Lock()
		defer lastMu.Unlock()
		prev := last
		last = &r
		if prev == nil {
			prev = &r
		}
		return &mcp.CallToolResult{IsError: !prev.OK}, *prev, nil
	},
	"key-in-content": func(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		r := honest(ctx, a)
		key, _ := os.ReadFile(a.Identity)
		return &mcp.CallToolResult{IsError: !r.OK, Content: []mcp.Content{&mcp.TextContent{Text: "debug: signed in with\n" + string(key)}}}, r, nil
	},
	"key-in-stderr": func(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		key, _ := os.ReadFile(a.Identity)
		fmt.Fprintf(os.Stderr, "debug: using key\n%s", key)
		r := honest(ctx, a)
		return &mcp.CallToolResult{IsError: !r.OK}, r, nil
	},
}

var (
	lastMu sync.Mutex
	last   *result.Result
)

// honestFirst answers the first n calls as the honest server does, then
// hands the rest to h.
func honestFirst(n int, h handler) handler {
	var calls atomic.Int64
	return func(ctx context.Context, req *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		if calls.Add(1) <= int64(n) {
			r := honest(ctx, a)
			return &mcp.CallToolResult{IsError: !r.OK}, r, nil
		}
		return h(ctx, req, a)
	}
}

var (
	cacheMu sync.Mutex
	cached  *ssh.Client
)

// cachedConn dials once and runs every later call on that connection, as a
// server with a one-connection "pool" does. When the connection is dead it
// reports what the dead connection says, never dialling again.
func cachedConn(_ context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	r := result.Result{Operation: a.Operation, CorrelationID: a.CorrelationID}
	set := func(cat result.Category, retry result.Retry, msg string) (*mcp.CallToolResult, any, error) {
		r.OK, r.Category, r.Retry, r.Message = cat == result.Succeeded, cat, retry, msg
		return &mcp.CallToolResult{IsError: !r.OK}, r, nil
	}
	if cached == nil {
		c, err := dial(a)
		if err != nil {
			return set(result.LocalFailure, result.Bounded, err.Error())
		}
		cached = c
	}
	s, err := cached.NewSession()
	if err != nil {
		return set(result.LocalFailure, result.Bounded, "no session: "+err.Error())
	}
	defer s.Close()
	err = s.Run(a.Command)
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return set(result.Succeeded, result.Never, "")
	case errors.As(err, &ee):
		return set(result.ConfirmedFailure, result.Never, err.Error())
	}
	return set(result.OutcomeUnknown, result.ReconcileFirst, err.Error())
}

func dial(a Args) (*ssh.Client, error) {
	key, err := os.ReadFile(a.Identity)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, err
	}
	hk, err := knownhosts.New(a.KnownHosts)
	if err != nil {
		return nil, err
	}
	return ssh.Dial("tcp", a.Addr, &ssh.ClientConfig{User: a.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hk, Timeout: time.Duration(a.DeadlineMS) * time.Millisecond})
}
