package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	shlex "github.com/anmitsu/go-shlex"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sshrig/sshrig/tool"
)

// Prefixes of the tool names this package resolves.
const (
	StdioPrefix = "mcp:"
	HTTPPrefix  = "mcp+http://"
	HTTPSPrefix = "mcp+https://"
)

// Session modes.
const (
	// Fresh starts a server (stdio) or opens a session (HTTP) per case; a
	// stdio server also gets the case's SSHRIG_* environment.
	Fresh = "fresh"
	// Shared keeps one server and one session for the whole run, so state
	// the server keeps between calls is part of what is tested.
	Shared = "shared"
)

// IsSpec reports whether name is an MCP tool spec.
func IsSpec(name string) bool {
	return strings.HasPrefix(name, StdioPrefix) || strings.HasPrefix(name, HTTPPrefix) || strings.HasPrefix(name, HTTPSPrefix)
}

// Options configure an MCP tool beyond its spec.
type Options struct {
	// Tool is the name of the MCP tool to call (--mcp-tool). Required.
	Tool string
	// Args is the arguments template (--mcp-args); "" is DefaultArgs.
	Args string
	// Session is Fresh (the default) or Shared.
	Session string
	// OpenTimeout bounds the preflight's start, initialize and tools/list
	// (default DefaultOpenTimeout). A case's own session is bounded by the
	// case's budget instead.
	OpenTimeout time.Duration
	// Native: the tool speaks no result contract, and a reading reads its
	// answer (Answer.Call) instead; the contract's own checks do not apply.
	Native bool
}

// DefaultOpenTimeout is long enough for a server run with 'go run' to be
// built on a loaded machine, short enough not to wait for ever on a server
// that never answers.
const DefaultOpenTimeout = time.Minute

// Tool is an MCP server under test.
type Tool struct {
	spec    string
	argv    []string // stdio
	url     string   // streamable HTTP
	name    string
	args    Args
	session string
	timeout time.Duration
	native  bool

	mu     sync.Mutex
	shared *session // Shared mode, once opened
	closed bool
	// network is where servers not tied to one case start (UseNetwork).
	network tool.Network
}

// UseNetwork implements tool.Networker: a stdio server the run shares, or
// the preflight's, starts in n. A server at a URL runs outside the rig,
// which cannot place it in the kernel network's tool namespace.
func (m *Tool) UseNetwork(n tool.Network) error {
	if n != nil && m.url != "" {
		return fmt.Errorf("mcp: %s is a server the rig does not start, so it cannot live in the kernel network's tool namespace (--net kernel); use a stdio server (mcp:COMMAND) or --net proxy", m.url)
	}
	m.mu.Lock()
	m.network = n
	m.mu.Unlock()
	return nil
}

// startLocked is how a server not tied to one case is started; m.mu is
// held.
func (m *Tool) startLocked() func(func() error) error {
	n := m.network
	return func(fn func() error) error { return tool.Within(n, fn) }
}

// ErrNoTool is returned by New when no MCP tool name is given.
var ErrNoTool = errors.New("mcptool: no MCP tool named (--mcp-tool NAME)")

// New resolves "mcp:COMMAND ARGS…" (POSIX shell quoting) or
// "mcp+http://HOST:PORT/PATH".
func New(spec string, o Options) (*Tool, error) {
	if o.Tool == "" {
		return nil, ErrNoTool
	}
	switch o.Session {
	case "":
		o.Session = Fresh
	case Fresh, Shared:
	default:
		return nil, fmt.Errorf("mcptool: session %q is neither %q nor %q", o.Session, Fresh, Shared)
	}
	args, err := ParseArgs(o.Args)
	if err != nil {
		return nil, err
	}
	if o.OpenTimeout <= 0 {
		o.OpenTimeout = DefaultOpenTimeout
	}
	t := &Tool{spec: spec, name: o.Tool, args: args, session: o.Session, timeout: o.OpenTimeout, native: o.Native}
	switch {
	case strings.HasPrefix(spec, StdioPrefix):
		argv, err := shlex.Split(strings.TrimPrefix(spec, StdioPrefix), true)
		if err != nil {
			return nil, fmt.Errorf("mcptool: %q: %v", spec, err)
		}
		if len(argv) == 0 {
			return nil, fmt.Errorf("mcptool: %q names no program", spec)
		}
		t.argv = argv
	case strings.HasPrefix(spec, HTTPPrefix), strings.HasPrefix(spec, HTTPSPrefix):
		raw := strings.TrimPrefix(spec, "mcp+")
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("mcptool: %q is not an http(s)://HOST:PORT/PATH address", spec)
		}
		t.url = raw
	default:
		return nil, fmt.Errorf("mcptool: %q starts with none of %s, %s, %s", spec, StdioPrefix, HTTPPrefix, HTTPSPrefix)
	}
	return t, nil
}

// Name implements tool.Tool.
func (m *Tool) Name() string { return m.spec + " #" + m.name }

// Run implements tool.Tool.
func (m *Tool) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	m.RunAnswer(ctx, t, stdout, stderr)
}

// session is one MCP client session and, for stdio, its server.
type session struct {
	cs     *mcp.ClientSession
	srv    *server // nil over HTTP
	listed *mcp.Tool
	stderr *stderrTail // Shared stdio: the server's stderr since the last call
}

func (s *session) close() []int {
	err := s.cs.Close()
	_ = err // a server that died already closed it
	if s.srv != nil {
		return s.srv.stop()
	}
	return nil
}

// StateError is a failed preflight state: installed or loaded.
type StateError struct {
	State string
	Err   error
}

func (e *StateError) Error() string { return e.State + ": " + e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }

// open starts a server (stdio) and initialises a session, then lists the
// tools. A failure to start or initialise is the installed state failing;
// no tool of that name is the loaded state failing.
func (m *Tool) open(ctx context.Context, env []string, start func(func() error) error, stderr io.Writer) (*session, error) {
	s := &session{}
	var tr mcp.Transport
	if m.argv != nil {
		srv, err := startServer(m.argv, env, start, stderr)
		if err != nil {
			return nil, &StateError{"installed", fmt.Errorf("the server %q did not start: %v", strings.Join(m.argv, " "), err)}
		}
		s.srv, tr = srv, srv.transport()
	} else {
		tr = &mcp.StreamableClientTransport{Endpoint: m.url, DisableStandaloneSSE: true}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "sshrig", Version: "1"}, nil)
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		why := err.Error()
		if s.srv != nil {
			if g := s.srv.stdout.Garbage(); g != nil {
				why = fmt.Sprintf("it wrote %q on stdout, which is not JSON-RPC", g)
			} else if ctx.Err() != nil {
				why = "it did not answer initialize in time"
			} else if end := s.srv.gone(time.Second); end != "" {
				why = "it ended (" + end + ") before answering initialize"
			}
			s.srv.stop()
		} else if ctx.Err() != nil {
			why = "it did not answer initialize in time"
		}
		return nil, &StateError{"installed", fmt.Errorf("the server did not initialise: %s", why)}
	}
	s.cs = cs
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			s.close()
			return nil, &StateError{"loaded", fmt.Errorf("tools/list failed: %v", err)}
		}
		names = append(names, t.Name)
		if t.Name == m.name && s.listed == nil {
			s.listed = t
		}
	}
	if s.listed == nil {
		s.close()
		listed := "no tools"
		if len(names) > 0 {
			listed = "only " + strings.Join(names, ", ")
		}
		return nil, &StateError{"loaded", fmt.Errorf("tools/list resolves 0 tools named %q (the server lists %s)", m.name, listed)}
	}
	return s, nil
}

// Preflight implements tool.Preflighter: the server starts and initialises
// (installed) and lists the tool (loaded). In Shared mode the session it
// opens is the run's. A stdio server in Fresh mode is started here without
// a case's SSHRIG_* environment, as it must start before any case.
func (m *Tool) Preflight(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	if m.session == Shared {
		_, err := m.sharedSession(ctx)
		return err
	}
	m.mu.Lock()
	start := m.startLocked()
	m.mu.Unlock()
	s, err := m.open(ctx, nil, start, io.Discard)
	if err != nil {
		return err
	}
	s.close()
	return nil
}

func (m *Tool) sharedSession(ctx context.Context) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("mcptool: closed")
	}
	if m.shared != nil {
		return m.shared, nil
	}
	tail := &stderrTail{}
	// The run's server outlives any one case's context; only opening it is
	// bounded.
	s, err := m.open(ctx, nil, m.startLocked(), tail)
	if err != nil {
		return nil, err
	}
	s.stderr = tail
	m.shared = s
	return s, nil
}

// Close ends a Shared session and its server; Fresh sessions end with their
// case. It is safe to call more than once.
func (m *Tool) Close() error {
	m.mu.Lock()
	s := m.shared
	m.shared, m.closed = nil, true
	m.mu.Unlock()
	if s != nil {
		if left := s.close(); len(left) > 0 {
			return fmt.Errorf("mcptool: the server left %d process(es) running (pids %v); they were killed", len(left), left)
		}
	}
	return nil
}

// stderrTail collects a shared server's stderr; each call takes what came
// since the one before.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

func (s *stderrTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) < 1<<20 {
		s.buf = append(s.buf, p...)
	}
	return len(p), nil
}

func (s *stderrTail) take() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buf
	s.buf = nil
	return b
}
