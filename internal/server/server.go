package server

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/tempdir"
)

// Config configures a Server. SSH, Control and Token are required.
type Config struct {
	SSH     net.Listener // where proxied SSH connections arrive
	Control net.Listener // where the rig connects
	Token   []byte       // authenticates the rig on the control listener

	// Scratch is the commands' working directory. When empty, a private
	// temporary directory is created and removed by Close.
	Scratch string
	// Shell runs commands as Shell -c COMMAND. Default /bin/sh.
	Shell string
	// HostKey is the SSH host key. Default: a fresh ed25519 key.
	HostKey gossh.Signer
	// Path is the PATH commands run with. Default: the server's own PATH.
	Path string
	// RefusePTY refuses every pty-req, as an sshd with PermitTTY no does
	// (a case can ask for the same with control.Request.RefusePTY).
	RefusePTY bool
	// NoNamespaces gives commands the machine's /tmp even where a private
	// mount namespace is available (each case keeps its own home and SFTP
	// tree): the fallback, chosen.
	NoNamespaces bool

	// commandNamespaces skips the per-case namespace thread even as root,
	// for tests of the set-up step an unprivileged server relies on.
	commandNamespaces bool
}

// LedgerName is the ledger file in the scratch directory.
const LedgerName = "ledger"

// preambleTimeout bounds how long a connection may take to name its case.
const preambleTimeout = 10 * time.Second

// Server is the rig's SSH server. Create it with New, run it with Serve, stop
// it with Close.
type Server struct {
	cfg        Config
	ssh        *gliderssh.Server
	ctl        *control.Server
	hostKey    gossh.Signer
	scratch    string
	ownScratch bool
	ledger     string
	shell      string
	env        []string
	gates      string // a private directory for the commands' gate FIFOs
	gateN      atomic.Uint64

	// Each case's host (host.go): how commands get a private /tmp, the
	// server's own binary for the set-up step, and the directories under
	// /tmp they must still find.
	ns    namespaceMode
	nsWhy string // why there is no namespace
	self  string
	keep  []string

	emitMu sync.Mutex // sequence numbers follow wire order
	seq    uint64

	mu    sync.Mutex
	cases map[string]*caseState
	holds map[uint64]*hold
	// unattributed holds connections still reading their preamble.
	unattributed map[net.Conn]bool
	user         string
	keys         map[string]bool // authorized public keys, by wire encoding
	closing      chan struct{}
	closed       bool

	work     *tracker // every goroutine the server starts or hosts
	serveErr chan error
}

// New checks cfg and prepares a server; nothing is accepted until Serve.
func New(cfg Config) (*Server, error) {
	if cfg.SSH == nil || cfg.Control == nil {
		return nil, errors.New("server: SSH and Control listeners are required")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("server: control token must be at least 16 bytes")
	}
	s := &Server{
		cfg:          cfg,
		cases:        map[string]*caseState{},
		holds:        map[uint64]*hold{},
		unattributed: map[net.Conn]bool{},
		keys:         map[string]bool{},
		closing:      make(chan struct{}),
		work:         newTracker(),
		shell:        cfg.Shell,
	}
	if s.shell == "" {
		s.shell = "/bin/sh"
	}
	if _, err := os.Stat(s.shell); err != nil {
		return nil, fmt.Errorf("server: shell: %w", err)
	}
	var err error
	if s.hostKey, err = hostSigner(cfg.HostKey); err != nil {
		return nil, err
	}
	if err := s.makeScratch(); err != nil {
		return nil, err
	}
	path := commandPath(cfg.Path)
	// HOME is each case's own (spawn).
	s.env = []string{
		"PATH=" + path,
		"LC_ALL=C",
		"SSHRIG_LEDGER=" + s.ledger,
	}
	// Outside the scratch directory, which tools see (over SFTP too).
	gates, err := tempdir.Make("gates")
	if err != nil {
		return nil, fmt.Errorf("server: gates: %w", err)
	}
	s.gates = gates
	s.keep = keepPaths(append([]string{s.scratch, s.gates}, filepath.SplitList(path)...)...)
	if cfg.NoNamespaces {
		s.nsWhy = "Config.NoNamespaces"
	} else {
		s.ns, s.nsWhy = s.chooseNamespaces()
	}

	s.ssh = s.newSSHServer()
	s.ctl = control.NewServer(cfg.Control, cfg.Token, control.Ready{
		PID:     os.Getpid(),
		HostKey: string(gossh.MarshalAuthorizedKey(s.hostKey.PublicKey())),
		Scratch: s.scratch,
		Ledger:  s.ledger,
		Shell:   s.shell,
	}, (*controlHandler)(s))
	return s, nil
}

// hostSigner is the configured host key, or a fresh ed25519 key.
func hostSigner(configured gossh.Signer) (gossh.Signer, error) {
	if configured != nil {
		return configured, nil
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("server: host key: %w", err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("server: host key: %w", err)
	}
	return signer, nil
}

// makeScratch makes the scratch directory (a private temporary one unless
// configured) and the ledger in it.
func (s *Server) makeScratch() error {
	s.scratch = s.cfg.Scratch
	if s.scratch == "" {
		dir, err := tempdir.Make("scratch")
		if err != nil {
			return fmt.Errorf("server: scratch: %w", err)
		}
		s.scratch, s.ownScratch = dir, true
	} else if err := os.MkdirAll(s.scratch, 0o700); err != nil {
		return fmt.Errorf("server: scratch: %w", err)
	}
	if abs, err := filepath.Abs(s.scratch); err == nil {
		s.scratch = abs
	}
	s.ledger = filepath.Join(s.scratch, LedgerName)
	// The ledger exists from the start, so reading it never needs a test
	// for its existence (one process fewer per probe).
	if f, err := os.OpenFile(s.ledger, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return fmt.Errorf("server: ledger: %w", err)
	} else {
		f.Close()
	}
	return nil
}

// commandPath is the PATH commands run with: the configured one, else the
// server's own, else a default.
func commandPath(configured string) string {
	path := configured
	if path == "" {
		path = os.Getenv("PATH")
	}
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	return path
}

// newSSHServer is the SSH server that serves proxied connections, each
// attributed to its case by the tconn it arrives on.
func (s *Server) newSSHServer() *gliderssh.Server {
	return &gliderssh.Server{
		Version:          "sshrig",
		HostSigners:      []gliderssh.Signer{s.hostKey},
		PublicKeyHandler: s.checkKey,
		ConnCallback: func(ctx gliderssh.Context, c net.Conn) net.Conn {
			ctx.SetValue(connKey{}, c.(*tconn))
			return c
		},
		ServerConfigCallback: func(ctx gliderssh.Context) *gossh.ServerConfig {
			tc := ctx.Value(connKey{}).(*tconn)
			return &gossh.ServerConfig{AuthLogCallback: tc.authLog}
		},
		ChannelHandlers: map[string]gliderssh.ChannelHandler{"session": s.handleChannel, "direct-tcpip": s.handleDirectTCPIP},
		RequestHandlers: map[string]gliderssh.RequestHandler{"default": s.handleGlobal},
	}
}

// HostKey is the server's public host key.
func (s *Server) HostKey() gossh.PublicKey { return s.hostKey.PublicKey() }

// Ledger is the path marker-wrapped commands should append to.
func (s *Server) Ledger() string { return s.ledger }

// Scratch is the commands' working directory.
func (s *Server) Scratch() string { return s.scratch }

// Start accepts SSH and control connections in the background until Close.
func (s *Server) Start() {
	s.serveErr = make(chan error, 2)
	s.work.enter()
	go func() {
		defer s.work.leave()
		s.serveErr <- s.ctl.Serve()
	}()
	s.work.enter()
	go func() {
		defer s.work.leave()
		s.serveErr <- s.acceptSSH()
	}()
}

func (s *Server) acceptSSH() error {
	for {
		raw, err := s.cfg.SSH.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		if !s.work.enter() {
			raw.Close()
			return nil
		}
		go func() {
			defer s.work.leave()
			s.handleRaw(raw)
		}()
	}
}

// Close ends every case (killing its process groups), closes the listeners and
// connections, waits for every goroutine and removes a scratch directory it
// created. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	cases := make([]*caseState, 0, len(s.cases))
	for _, c := range s.cases {
		cases = append(cases, c)
	}
	for raw := range s.unattributed {
		raw.Close()
	}
	s.mu.Unlock()

	var errs []error
	if err := s.cfg.SSH.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		errs = append(errs, err)
	}
	for _, c := range cases {
		s.endCase(c, "server closing")
	}
	if err := s.ctl.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		errs = append(errs, err)
	}
	s.ssh.Close()
	<-s.work.close()
	if err := os.RemoveAll(s.gates); err != nil {
		errs = append(errs, err)
	}
	if s.ownScratch {
		if err := os.RemoveAll(s.scratch); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// emit stamps and sends an event.
func (s *Server) emit(e control.Event) uint64 {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.seq++
	e.Seq = s.seq
	e.Time = time.Now()
	s.ctl.Emit(e)
	return e.Seq
}

// emitHold registers h under the event's sequence number before the event
// leaves, so a release can never arrive for a hold the server does not know.
func (s *Server) emitHold(e control.Event, h *hold) uint64 {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.seq++
	e.Seq = s.seq
	e.Time = time.Now()
	s.mu.Lock()
	s.holds[e.Seq] = h
	s.mu.Unlock()
	s.ctl.Emit(e)
	return e.Seq
}

// checkKey accepts the run's keys, the case's own keys (until revoked) and
// certificates signed by the case's CA (valid by the case's clock). It
// records why it refused, for the auth_rejected event.
func (s *Server) checkKey(ctx gliderssh.Context, key gliderssh.PublicKey) bool {
	tc := ctx.Value(connKey{}).(*tconn)
	c := tc.c
	s.mu.Lock()
	user, runKey := s.user, s.keys[string(key.Marshal())]
	s.mu.Unlock()
	refuse := func(why string) bool {
		tc.setAuthRefusal(why)
		return false
	}
	if user != "" && ctx.User() != user {
		return refuse(fmt.Sprintf("unknown user %q", ctx.User()))
	}
	if cert, ok := key.(*gossh.Certificate); ok {
		if c.ca == nil {
			return refuse("certificates are not accepted for this case")
		}
		offset := time.Duration(c.clockOffset.Load())
		checker := gossh.CertChecker{
			IsUserAuthority: func(auth gossh.PublicKey) bool { return bytes.Equal(auth.Marshal(), c.ca.Marshal()) },
			Clock:           func() time.Time { return time.Now().Add(offset) },
		}
		if err := checker.CheckCert(ctx.User(), cert); err != nil {
			return refuse("certificate refused: " + err.Error())
		}
		return true
	}
	if runKey {
		return true
	}
	if c.keys[string(key.Marshal())] {
		if c.revoked.Load() {
			return refuse("key revoked")
		}
		return true
	}
	return refuse("key not authorized")
}

// controlHandler serves the rig's requests.
type controlHandler Server

func (h *controlHandler) Handle(req control.Request) error {
	s := (*Server)(h)
	switch req.Op {
	case control.OpPing:
		return nil
	case control.OpAuthorize:
		keys := map[string]bool{}
		for i, line := range req.Keys {
			k, _, _, _, err := gossh.ParseAuthorizedKey([]byte(line))
			if err != nil {
				return fmt.Errorf("key %d: %v", i+1, err)
			}
			keys[string(k.Marshal())] = true
		}
		s.mu.Lock()
		s.user, s.keys = req.User, keys
		s.mu.Unlock()
		return nil
	case control.OpSetupCase:
		return s.setupCase(req)
	case control.OpRelease:
		s.mu.Lock()
		hd := s.holds[req.Seq]
		s.mu.Unlock()
		if hd == nil || hd.caseID != req.Case {
			return fmt.Errorf("no hold %d for case %q", req.Seq, req.Case)
		}
		hd.release()
		return nil
	case control.OpFault:
		return s.makeFault(req.Case, req.Seq, req.Fault)
	case control.OpCredential:
		s.mu.Lock()
		c := s.cases[req.Case]
		s.mu.Unlock()
		if c == nil {
			return fmt.Errorf("unknown case %q", req.Case)
		}
		switch req.Action {
		case "expire":
			// Every certificate the rig issues is valid for an hour; two
			// days on, all of them have expired.
			c.clockOffset.Store(int64(48 * time.Hour))
		case "revoke":
			c.revoked.Store(true)
		default:
			return fmt.Errorf("unknown credential action %q (valid: expire, revoke)", req.Action)
		}
		s.emit(control.Event{Kind: control.ServerProblem, Case: c.id, Detail: "credential " + req.Action + "d by the rig"})
		return nil
	case control.OpEndCase:
		s.mu.Lock()
		c := s.cases[req.Case]
		s.mu.Unlock()
		if c == nil {
			return fmt.Errorf("unknown case %q", req.Case)
		}
		// Teardown waits for the case's handlers, which may be waiting on
		// this very connection; so it runs apart and reports with an event.
		if s.work.enter() {
			go func() {
				defer s.work.leave()
				s.endCase(c, "ended by the rig")
			}()
		}
		return nil
	}
	return fmt.Errorf("unknown op %q", req.Op)
}

// Disconnected ends every case: nobody is left to release their holds.
func (h *controlHandler) Disconnected() {
	s := (*Server)(h)
	s.mu.Lock()
	cases := make([]*caseState, 0, len(s.cases))
	for _, c := range s.cases {
		cases = append(cases, c)
	}
	s.mu.Unlock()
	for _, c := range cases {
		s.endCase(c, "rig disconnected")
	}
}

func (s *Server) setupCase(req control.Request) error {
	if err := control.ValidID(req.Case); err != nil {
		return err
	}
	arm := control.Arm{}
	if req.Arm != nil {
		arm = *req.Arm
		if arm.Moment == fault.Refuse {
			return errors.New("the refuse moment is the cutter's: nothing reaches the server")
		}
		if arm.OutputBytes < 0 {
			return fmt.Errorf("output_bytes %d < 0", arm.OutputBytes)
		}
		if arm.Moment == fault.Output && arm.OutputBytes == 0 {
			arm.OutputBytes = 1
		}
	}
	if arm.Disposition == 0 {
		arm.Disposition = fault.Survive
	}
	free := func() error {
		if s.closed {
			return errors.New("server closing")
		}
		if _, ok := s.cases[req.Case]; ok {
			return fmt.Errorf("case %q already set up", req.Case)
		}
		return nil
	}
	s.mu.Lock()
	err := free()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	c := newCase(req.Case, arm, req.Probe)
	for i, line := range req.CaseKeys {
		k, _, _, _, err := gossh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return fmt.Errorf("case key %d: %v", i+1, err)
		}
		c.keys[string(k.Marshal())] = true
	}
	if req.CA != "" {
		k, _, _, _, err := gossh.ParseAuthorizedKey([]byte(req.CA))
		if err != nil {
			return fmt.Errorf("ca: %v", err)
		}
		c.ca = k
	}
	c.denyExec, c.rejectSession, c.refusePTY = req.DenyExec, req.RejectSession, req.RefusePTY
	// The host is made outside the server's lock, which every connection's
	// attribution and authentication take: its files and namespace thread
	// must not hold them up.
	switch {
	case req.Adopt && (req.Probe || req.SharedHost):
		return errors.New("only a case with a host of its own adopts it")
	case req.Probe || req.SharedHost:
		c.host = s.sharedHost()
	case req.Adopt:
		if c.host, err = s.adoptCaseHost(req.Case); err != nil {
			return fmt.Errorf("case %q: adopt its host: %w", req.Case, err)
		}
	default:
		if c.host, err = s.newCaseHost(req.Case); err != nil {
			return fmt.Errorf("case %q: its host: %w", req.Case, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := free(); err != nil {
		c.host.close()
		return err
	}
	s.cases[req.Case] = c
	if req.Adopt {
		s.emit(control.Event{Kind: control.CaseAdopted, Case: c.id, PID: os.Getpid(),
			Detail: "set up again on the host's files after it came back; no process of the case from before runs in this server"})
	}
	return nil
}
