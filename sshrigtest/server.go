package sshrigtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/secret"
)

// DefaultSettle is how long an operation's end waits for its remote command
// to end before the ledger is read (the rig's own default).
const DefaultSettle = 5 * time.Second

// defaultOperation is an operation's name unless Operation names another:
// the one the rig gives its default workload.
const defaultOperation = "run_workload"

// Server is the rig's SSH server held by one test, as an httptest.Server is
// an HTTP server held by one: it listens on Addr for the server's whole life,
// its client key and host key are made for it, and Arm says where the next
// operation's transport dies. Make one with NewServer; the test's cleanup
// closes it.
//
// Every connection a client makes belongs to an operation: to the one Arm
// returned last, until its Truth or Judge is asked or the next Arm; with
// nothing armed, to an unarmed operation of its own (no cut) that nobody
// judges. A connection ends with its operation, so a client dials again for
// each one.
type Server struct {
	t          testing.TB
	env        *engine.Env
	ln         *net.TCPListener
	addr       string
	dir        string
	knownHosts string
	settle     time.Duration
	secrets    []secret.Secret
	acceptDone chan struct{}

	mu        sync.Mutex
	current   *Op   // connections go here
	ops       []*Op // every operation begun, for Close
	closed    bool
	acceptErr error // why a connection could not be given an operation

	closeOnce sync.Once
	closeErr  error
}

// A ServerOption configures a Server.
type ServerOption func(*serverConfig)

type serverConfig struct {
	launcher engine.Launcher
	settle   time.Duration
}

// InContainer runs the server in a disposable container that l starts, the
// container target. In a test binary, set l.ServerBinary to a static build of
// sshrig: the test binary is not one.
func InContainer(l *containers.Launcher) ServerOption {
	return func(c *serverConfig) { c.launcher = l }
}

// Settle sets how long an operation's end waits for its remote command to
// end before the ledger is read (default DefaultSettle).
func Settle(d time.Duration) ServerOption {
	return func(c *serverConfig) { c.settle = d }
}

// NewServer starts a server held by t (embedded in this process unless an
// option says otherwise) and registers its Close with t.Cleanup. When t has
// failed by then, the server's run directory (Dir) is kept and its path
// logged; otherwise it is removed.
func NewServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	cfg := serverConfig{settle: DefaultSettle}
	for _, o := range opts {
		o(&cfg)
	}
	eopts := engine.Options{}
	if cfg.launcher != nil {
		eopts.Launcher = cfg.launcher
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	env, err := engine.Start(ctx, eopts)
	if err != nil {
		t.Fatalf("sshrigtest: start the server: %v", err)
	}
	s := &Server{t: t, env: env, settle: cfg.settle, acceptDone: make(chan struct{})}
	// Registered before anything else can fail: whatever happens, the
	// server stops with the test.
	t.Cleanup(s.cleanup)
	if s.dir, err = os.MkdirTemp("", "sshrigtest-server-"); err != nil {
		close(s.acceptDone)
		t.Fatalf("sshrigtest: run directory: %v", err)
	}
	if s.ln, err = net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
		close(s.acceptDone)
		t.Fatalf("sshrigtest: listen: %v", err)
	}
	s.addr = s.ln.Addr().String()
	s.knownHosts = filepath.Join(s.dir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(s.addr)}, env.HostKey())
	if err := os.WriteFile(s.knownHosts, []byte(line+"\n"), 0o600); err != nil {
		close(s.acceptDone)
		t.Fatalf("sshrigtest: known_hosts: %v", err)
	}
	// The client's key must never show in what a client reports.
	if s.secrets, err = secret.OfKeyFile(env.Identity()); err != nil {
		close(s.acceptDone)
		t.Fatalf("sshrigtest: the client key: %v", err)
	}
	go s.accept()
	return s
}

// Addr is the address a client dials, "127.0.0.1:port": the same for the
// server's whole life, whichever operation is armed.
func (s *Server) Addr() string { return s.addr }

// User is the user name a client logs in as.
func (s *Server) User() string { return s.env.User() }

// Identity is the path of the client's private key file (OpenSSH format),
// which the server accepts. It is removed when the server closes.
func (s *Server) Identity() string { return s.env.Identity() }

// KnownHosts is the path of a known_hosts file that pins the server's host
// key for Addr, for clients that read one (OpenSSH's ssh -o
// UserKnownHostsFile=…).
func (s *Server) KnownHosts() string { return s.knownHosts }

// Dir is the server's run directory: KnownHosts and, for every operation
// that ended, its evidence (<correlation id>.json: the server's events, the
// cut, the truth). It is kept when the test fails.
func (s *Server) Dir() string { return s.dir }

// ClientConfig returns a client configuration for golang.org/x/crypto/ssh
// that logs in as User with the client key and accepts only the server's
// host key. Each call returns a new value the caller may change (a Timeout,
// say).
func (s *Server) ClientConfig() *gossh.ClientConfig {
	return &gossh.ClientConfig{
		User:            s.env.User(),
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(s.env.ToolSigner())},
		HostKeyCallback: gossh.FixedHostKey(s.env.HostKey()),
	}
}

// accept hands every connection to the operation it belongs to. The
// connection goes to that operation's cutter as it is (cutter.Adopt), under
// s.mu: an operation ending (Truth, Arm) first stops being current, so no
// connection reaches a case that is ending.
func (s *Server) accept() {
	defer close(s.acceptDone)
	for {
		tc, err := s.ln.AcceptTCP()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.current == nil && !s.closed {
			op, err := s.begin(fault.None, 0, armConfig{})
			if err != nil {
				s.acceptErr = errors.Join(s.acceptErr, fmt.Errorf("a connection with nothing armed: %w", err))
			}
			s.current = op
		}
		if s.current == nil {
			tc.Close()
		} else if err := s.current.run.Adopt(tc); err != nil {
			s.acceptErr = errors.Join(s.acceptErr, err)
		}
		s.mu.Unlock()
	}
}

// begin starts an operation on the server; the caller holds s.mu.
func (s *Server) begin(m fault.Moment, c fault.Cut, a armConfig) (*Op, error) {
	if a.disposition == 0 {
		a.disposition = fault.Survive
	}
	if a.operation == "" {
		a.operation = defaultOperation
	}
	spec := engine.Spec{ID: s.env.NewID(), Moment: m, Disposition: a.disposition, OutputBytes: a.outputBytes}
	if m.HasCut() {
		spec.Cut = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := s.env.Begin(ctx, spec)
	if err != nil {
		return nil, err
	}
	op := &Op{srv: s, run: run, id: spec.ID, moment: m, cut: spec.Cut, disposition: a.disposition,
		exitCode: a.exitCode, operation: a.operation}
	workload := a.command
	if workload == "" {
		workload = defaultWorkload(a.exitCode)
	}
	if op.command, err = run.Wrap(workload); err != nil {
		op.finish()
		return nil, err
	}
	s.ops = append(s.ops, op)
	return op, nil
}

// defaultWorkload is the rig's own default workload: two lines of output,
// then exit code.
func defaultWorkload(code int) string {
	w := "printf 'sshrig workload: step one\\n'; printf 'sshrig workload: step two\\n'"
	if code != 0 {
		w += fmt.Sprintf("; exit %d", code)
	}
	return w
}

// Arm says where the next operation's transport dies: cut kind c at moment
// m (c is ignored for fault.None). It ends the operation armed before, if its
// truth was not asked yet, and returns the new one: run its Command with
// your own client, dialling Addr, then ask its Truth and Judge what your
// client reported. Call it from the test's goroutine; a failure to arm
// stops the test.
//
// The moments fault.Refuse (the address always accepts) and the step
// moments (they need a conversation to place them in) cannot be armed.
func (s *Server) Arm(m fault.Moment, c fault.Cut, opts ...ArmOption) *Op {
	s.t.Helper()
	var a armConfig
	for _, o := range opts {
		o(&a)
	}
	switch {
	case m == fault.Refuse:
		s.t.Fatalf("sshrigtest: Arm(%s): a held server's address always accepts; refuse needs an address nothing listens on", m)
	case m.IsStep():
		s.t.Fatalf("sshrigtest: Arm(%s): a step moment needs the request it holds at, which only a matrix run learns", m)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.t.Fatalf("sshrigtest: Arm(%s, %s) after Close", m, c)
	}
	if prev := s.current; prev != nil {
		s.current = nil
		prev.finish()
	}
	op, err := s.begin(m, c, a)
	if err != nil {
		s.t.Fatalf("sshrigtest: Arm(%s, %s): %v", m, c, err)
	}
	s.current = op
	return op
}

// An ArmOption configures an operation Arm arms.
type ArmOption func(*armConfig)

type armConfig struct {
	disposition fault.Disposition
	exitCode    int
	command     string
	operation   string
	outputBytes int64
}

// Disposition sets what the remote command does when its transport dies
// (default fault.Survive, as under OpenSSH without a pty).
func Disposition(d fault.Disposition) ArmOption { return func(a *armConfig) { a.disposition = d } }

// ExitCode makes the default workload exit with code.
func ExitCode(code int) ArmOption { return func(a *armConfig) { a.exitCode = code } }

// Command replaces the default workload with a shell command of your own;
// Op.Command wraps it with the operation's markers.
func Command(cmd string) ArmOption { return func(a *armConfig) { a.command = cmd } }

// Operation names the operation a result must carry (default
// "run_workload", as the rig names its default workload's).
func Operation(name string) ArmOption { return func(a *armConfig) { a.operation = name } }

// OutputBytes is N for fault.Output: the cut lands after N bytes of the
// command's output reached the client (default fault.DefaultOutputBytes).
func OutputBytes(n int64) ArmOption { return func(a *armConfig) { a.outputBytes = n } }

// Close ends the armed operation and every other one not yet ended, stops
// accepting, stops the server and removes the client key. It waits for every
// goroutine the server started. It is safe to call more than once; later
// calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.current = nil
		ops := append([]*Op(nil), s.ops...)
		s.mu.Unlock()
		var errs []error
		if s.ln != nil {
			s.ln.Close()
		}
		<-s.acceptDone
		for _, op := range ops {
			op.finish()
		}
		if err := s.env.Close(); err != nil {
			errs = append(errs, err)
		}
		s.mu.Lock()
		if s.acceptErr != nil {
			errs = append(errs, s.acceptErr)
		}
		s.mu.Unlock()
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sshrigtest: close: %w", err)
		}
	})
	return s.closeErr
}

// cleanup closes the server when its test ends and keeps the run
// directory when the test failed.
func (s *Server) cleanup() {
	if err := s.Close(); err != nil {
		s.t.Error(err)
	}
	if s.dir == "" {
		return
	}
	if s.t.Failed() {
		s.t.Logf("sshrigtest: kept the server's run directory %s (known_hosts, and each operation's evidence as <correlation id>.json)", s.dir)
		return
	}
	os.RemoveAll(s.dir)
}

// evidenceFile is what an operation's evidence file holds.
type evidenceFile struct {
	Name          string           `json:"name"`
	CorrelationID string           `json:"correlation_id"`
	Operation     string           `json:"operation"`
	Command       string           `json:"command"`
	Evidence      *engine.Evidence `json:"evidence,omitempty"`
	Error         string           `json:"error,omitempty"`
}

// writeEvidence writes the operation's evidence into the run directory and
// returns its path, or "" when it could not.
func (o *Op) writeEvidence() string {
	if o.srv.dir == "" {
		return ""
	}
	f := evidenceFile{Name: o.Name(), CorrelationID: o.id, Operation: o.operation, Command: o.command, Evidence: o.ev}
	if o.err != nil {
		f.Error = o.err.Error()
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return ""
	}
	path := filepath.Join(o.srv.dir, o.id+".json")
	if os.WriteFile(path, secret.Redact(b, o.srv.secrets), 0o600) != nil {
		return ""
	}
	return path
}

// Name names the operation as the rig names its cases: moment, cut, and the
// disposition (or, where the caller receives a result, the exit code), e.g.
// "started.reset.hangup" or "none.exit0".
func (o *Op) Name() string {
	parts := []string{o.moment.String()}
	if o.moment.HasCut() {
		parts = append(parts, o.cut.String())
	}
	if o.moment == fault.ExitStatus || o.moment == fault.None {
		parts = append(parts, fmt.Sprintf("exit%d", o.exitCode))
	} else {
		parts = append(parts, o.disposition.String())
	}
	return strings.Join(parts, ".")
}
