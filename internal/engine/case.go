package engine

import (
	"context"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"golang.org/x/sys/unix"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/cutter"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/jumpdial"
	"github.com/sshrig/sshrig/internal/kernelnet"
	"github.com/sshrig/sshrig/internal/sockowner"
	"github.com/sshrig/sshrig/markers"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/target"
	"github.com/sshrig/sshrig/tool"
)

// Spec says where and how a case's transport dies.
type Spec struct {
	ID     string // unique per case run: the correlation and marker id
	Moment fault.Moment
	// Cut is ignored for the none and refuse moments. fault.Stall cuts
	// nothing: the server holds the command until the tool has returned
	// (its answer comes later than the tool's deadline), while the
	// connection stays up and answers keepalives.
	Cut         fault.Cut
	Disposition fault.Disposition
	// OutputBytes is N for the output moment; default
	// fault.DefaultOutputBytes. Named for another moment (or none), it makes
	// the server announce the output moment unheld.
	OutputBytes int64

	// Credential, when set, gives the case a credential of its own that the
	// server accepts at set-up (a first connection the rig makes) and
	// rejects at the tool's call.
	Credential fault.Credential
	// Refusal, when set, makes the server refuse the work.
	Refusal fault.Refusal
	// Host, when set, replaces the host part of the address the tool dials
	// (an unresolvable name, for a local failure).
	Host string
	// ChangedHostKey gives the tool a known_hosts (and in-process clients
	// a pinned key) that names a fresh key the server does not have: to the
	// tool, the server presents a host key that is not the one it knows.
	ChangedHostKey bool
	// RefusePTY makes the server refuse pty-req, as an sshd with PermitTTY
	// no does: the session goes on without a terminal.
	RefusePTY bool
	// Link puts slow-link faults on the case's cutter (none by default).
	Link cutter.Link
	// WorkloadRequest, when > 0, is the ordinal of the case's exec or shell
	// request that runs the workload, as a preflight learned it
	// (control.Arm.WorkloadRequest): for a tool that uploads a script and
	// runs it with a command that does not carry the markers.
	WorkloadRequest int
	// HoldCommand, when set, is the digest of the command whose exec
	// request the case's moments hold at instead of the workload's
	// (control.Arm.HoldCommand): an agent's lookup or note call.
	HoldCommand string
	// AnswerDelay makes the server wait this long before it answers each
	// channel request of the case (control.Arm.AnswerDelay).
	AnswerDelay time.Duration
	// Step, for the moments prep-step and cleanup-step, names the request
	// of the tool's conversation the server holds at (control.Arm.Step).
	Step *fault.Step
	// RebootPause is how long a fault.Reboot keeps the case's host down;
	// 0 is fault.DefaultRebootPause.
	RebootPause time.Duration
	// Hop, when set, puts a jump host in front of the target: the tool
	// reaches the target (Run.Addr) through the jump host (Run.JumpAddr),
	// the server being both, and the cut at the target's moment kills
	// this hop. The refuse moment with fault.JumpTarget is a dead target
	// behind a live jump host.
	Hop fault.Hop
}

// rebootPause is how long a reboot keeps the host down.
func (s Spec) rebootPause() time.Duration {
	if s.RebootPause > 0 {
		return s.RebootPause
	}
	return fault.DefaultRebootPause
}

// Validate checks the spec's values.
func (s Spec) Validate() error {
	if err := markers.ValidID(s.ID); err != nil {
		return err
	}
	if s.Moment < fault.Refuse || s.Moment > fault.None {
		return fmt.Errorf("engine: invalid moment %d", int(s.Moment))
	}
	if s.Moment.HasCut() {
		if _, err := s.Cut.MarshalText(); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	if s.Disposition != 0 && (s.Disposition < fault.Survive || s.Disposition > fault.RemoteKill) {
		return fmt.Errorf("engine: invalid disposition %d", int(s.Disposition))
	}
	if s.Moment.IsStep() && s.Step == nil || s.Step != nil && !s.Step.Fits(s.Moment) {
		return fmt.Errorf("engine: moment %s with step %v: a step case needs both", s.Moment, s.Step)
	}
	if s.Step != nil {
		if err := s.Step.Validate(); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	if s.Moment.HasCut() && !s.Cut.FitsMoment(s.Moment) {
		return fmt.Errorf("engine: cut %v cannot be made at moment %s", s.Cut, s.Moment)
	}
	if s.Cut.ServerSide() && (s.Hop != 0 || s.Step != nil) {
		return fmt.Errorf("engine: the far side's fault %v is made on the case's own connection: not behind a jump host, not at a step", s.Cut)
	}
	if s.RebootPause < 0 || s.RebootPause != 0 && s.Cut != fault.Reboot {
		return fmt.Errorf("engine: a reboot pause (%v) needs cut reboot", s.RebootPause)
	}
	if s.Hop != 0 {
		return s.validateHop()
	}
	return nil
}

// validateHop checks what a case with a jump host can be.
func (s Spec) validateHop() error {
	if _, err := s.Hop.MarshalText(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	switch {
	case s.Moment == fault.Refuse && s.Hop != fault.JumpTarget:
		return fmt.Errorf("engine: the refuse moment behind a jump host refuses the jump host's connection to the target: hop %s, not %s", fault.JumpTarget, s.Hop)
	case s.Hop == fault.JumpTarget && s.Moment.HasCut() && s.Cut.HelperCut():
		return fmt.Errorf("engine: no process of the tool's holds the jump host's connection to the target: kill-helper cuts hop %s only", fault.ClientJump)
	case s.Hop == fault.JumpTarget && s.Moment.HasCut() && s.Cut.NeedsKernel():
		return fmt.Errorf("engine: the jump host's connection to the target is cut by the proxy: %v cuts hop %s only", s.Cut, fault.ClientJump)
	case s.Credential != 0 || s.Host != "" || s.ChangedHostKey || s.Step != nil:
		return fmt.Errorf("engine: a case with a jump host has no credential, host, host-key or step fault of its own")
	}
	return nil
}

// Run is one case in flight: the server knows it, a cutter (or a refusing
// address) waits for the tool, and the cut happens when the server holds.
type Run struct {
	env     *Env
	spec    Spec
	cutter  *cutter.Cutter
	refused *cutter.Refused
	addr    string
	// Behind a jump host (Spec.Hop): jumpAddr is the jump host's address
	// (the cutter's), addr the target's as the jump host reaches it,
	// which the second cutter (target) or a refusing address
	// (targetRefused) holds.
	jumpAddr      string
	target        *cutter.Cutter
	targetRefused *cutter.Refused
	knownHosts    string
	// pinned is the host key the tool is told to expect: the server's, or
	// for ChangedHostKey a fresh one.
	pinned    gossh.PublicKey
	identity  string // the tool's key file: the run's, or the case's own
	cert      string // the case's certificate file, or ""
	caseKey   gossh.Signer
	toolDone  chan struct{} // closed by ToolReturned (a stall ends then)
	toolOnce  sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	watchDone chan struct{} // closed when the case ended or was abandoned
	watchOnce sync.Once
	cuts      sync.WaitGroup
	closeOnce sync.Once

	cutDone chan struct{} // closed once the hold at the armed moment was released
	toolPID atomic.Int64  // the tool's main process, when it runs as a program

	mu      sync.Mutex
	events  []control.Event
	changed chan struct{} // signalled on every event
	lost    map[int]chan struct{}
	// settled, for a request held at exec: closed once the server decided
	// it (skipped it, or started the command) after the release.
	settled chan struct{}
	heldAt  sessionKey
	cut     *CutRecord
	// wedged are the helpers a WedgeHelper cut stopped, killed when the
	// case ends (killWedged).
	wedged []int
	// finishing: the run waits for its cuts to end (waitCuts); a hold the
	// server announces from then on gets no cut (the case's end releases
	// it), so no cut starts while they are waited for.
	finishing bool
}

// CutRecord is what happened when the server held at the armed moment.
type CutRecord struct {
	Moment fault.Moment `json:"moment"`
	Kind   fault.Cut    `json:"cut,omitzero"`
	// Stall: nothing was cut; the server held until the tool returned.
	Stall bool `json:"stall,omitempty"`
	Conn  int  `json:"conn"`
	// Hop, behind a jump host, is the hop cut on the tool's side of the
	// jump host (fault.ClientJump): Conn, Sent and Delivered are then the
	// jump host's connection's, and HeldConn the target's connection the
	// server held. A cut of the jump host's connection to the target is
	// that connection's, as without a jump host.
	Hop       fault.Hop `json:"hop,omitzero"`
	HeldConn  int       `json:"held_conn,omitempty"`
	HoldSeq   uint64    `json:"hold_seq"`
	EventTime time.Time `json:"event_time"` // when the server announced the hold
	Sent      int64     `json:"sent"`       // bytes the server had written on the connection
	Delivered int64     `json:"delivered"`  // of those, delivered to the client before the cut
	// Unsent: of Delivered, the bytes still in the cutter's send queue when
	// a reset discarded them (cutter.Report.Unsent).
	Unsent  int64     `json:"unsent,omitempty"`
	CutTime time.Time `json:"cut_time,omitzero"`
	// Latency is from the server's announcement to the cut.
	Latency   time.Duration `json:"latency_ns"`
	FlushWait time.Duration `json:"flush_wait_ns"`
	// ServerSawLoss: the server saw its transport end before the hold was
	// released (for cuts that drop the transport).
	ServerSawLoss bool `json:"server_saw_loss"`
	// Helpers are the processes a kill-helper cut killed. NoHelper: the
	// tool holds its socket itself, so there was no helper to kill.
	Helpers  []int     `json:"helpers,omitempty"`
	NoHelper bool      `json:"no_helper,omitempty"`
	Released time.Time `json:"released,omitzero"`
	// Restart, for a reboot that restarted the case's host for real, is
	// what the restart took.
	Restart *RestartRecord `json:"restart,omitempty"`
	Err     string         `json:"error,omitempty"`
	// ToolLeft: the cut failed because the tool's end of the connection
	// was gone before it (the connection had ended while the server held,
	// or no process owned the tool's socket any more): the tool gave up
	// while the rig was still getting to the cut, as a starved rig lets it.
	ToolLeft bool `json:"tool_left,omitempty"`
}

// Held is the connection the server held at the moment: the cut one, or
// for a cut on the tool's side of a jump host the target's behind it.
func (c *CutRecord) Held() int {
	if c.HeldConn != 0 {
		return c.HeldConn
	}
	return c.Conn
}

// Discarded reports whether the cut threw away bytes the flush had
// counted as delivered: a reset's RST discards what still sat in the
// cutter's send queue (Unsent). A cut that leaves the tool's socket open
// (blackhole, stall) or closes it in order (close) lets the kernel
// transmit its queue all the same, so unsent bytes there still arrive, as
// they do later on a busy machine.
func (c *CutRecord) Discarded() bool { return c.Kind == fault.Reset && c.Unsent > 0 }

// Begin registers the case with the server and opens its cutter. A reboot
// on a target that restarts hosts for real runs on a host of its own
// (reboot.go).
func (e *Env) Begin(ctx context.Context, spec Spec) (*Run, error) {
	rb, ok := e.opts.Launcher.(target.Rebooter)
	if !ok || spec.Cut != fault.Reboot || !spec.Moment.HasCut() || e.kernel != nil || e.parent != nil {
		return e.begin(ctx, spec)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	h, err := e.ownHost(ctx, rb)
	if err != nil {
		return nil, fmt.Errorf("engine: case %s: a host of its own: %w", spec.ID, err)
	}
	r, err := h.begin(ctx, spec)
	if err != nil {
		h.closeOwnHost()
		return nil, err
	}
	return r, nil
}

func (e *Env) begin(ctx context.Context, spec Spec) (*Run, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Moment.HasCut() && spec.Cut.NeedsKernel() && e.kernel == nil {
		return nil, fmt.Errorf("engine: case %s: cut %v needs the kernel network (--net kernel)", spec.ID, spec.Cut)
	}
	if spec.Disposition == 0 {
		spec.Disposition = fault.Survive
	}
	if spec.Moment == fault.Output && spec.OutputBytes == 0 {
		spec.OutputBytes = fault.DefaultOutputBytes
	}
	r := &Run{env: e, spec: spec, watchDone: make(chan struct{}), cutDone: make(chan struct{}),
		changed: make(chan struct{}, 1), lost: map[int]chan struct{}{}, toolDone: make(chan struct{}), settled: make(chan struct{}),
		identity: e.identity, pinned: e.hostKey}
	if spec.ChangedHostKey {
		_, other, err := newKey()
		if err != nil {
			return nil, fmt.Errorf("engine: case %s: %w", spec.ID, err)
		}
		r.pinned = other.PublicKey()
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	// Registered before the server knows the case, so no event is missed.
	e.runsMu.Lock()
	if e.runs[spec.ID] != nil {
		e.runsMu.Unlock()
		r.cancel()
		return nil, fmt.Errorf("engine: case %s is already running", spec.ID)
	}
	e.runs[spec.ID] = r
	e.runsMu.Unlock()
	if f := e.link.Load().follower; f != nil {
		f.Watch(spec.ID) // before anything can write its markers
	}
	req := setupRequest(spec, e.sharedHost.Load())
	if spec.Hop != 0 {
		if err := r.listenTarget(); err != nil {
			r.closeLocal()
			return nil, fmt.Errorf("engine: case %s: %w", spec.ID, err)
		}
		req.Arm.Jump = &control.Jump{Target: r.targetAddr(), Hop: spec.Hop}
	}
	if spec.Credential != 0 {
		if err := r.makeCredential(&req); err != nil {
			r.closeLocal()
			return nil, fmt.Errorf("engine: case %s: credential: %w", spec.ID, err)
		}
	}
	if err := e.do(ctx, req); err != nil {
		r.closeLocal()
		return nil, err
	}
	err := r.listen()
	if spec.Host != "" && err == nil {
		_, port, _ := net.SplitHostPort(r.addr)
		r.addr = net.JoinHostPort(spec.Host, port)
	}
	if err == nil {
		err = r.writeKnownHosts()
	}
	if err == nil && spec.Credential != 0 {
		err = r.useThenSpoil(ctx)
	}
	if err != nil {
		r.abort()
		return nil, fmt.Errorf("engine: case %s: %w", spec.ID, err)
	}
	return r, nil
}

// listen opens the case's address: the cutter, or for the refuse moment an
// address that refuses. Under the kernel network both live in the server's
// namespace, and the cutter hands its kernel cuts to the kernel.
func (r *Run) listen() error {
	e, spec := r.env, r.spec
	var err error
	switch {
	case spec.Moment == fault.Refuse && spec.Hop == 0 && e.kernel != nil:
		err = e.kernel.InServer(func() error {
			var err error
			r.refused, err = cutter.RefusingOn(kernelnet.ServerAddr)
			return err
		})
	case spec.Moment == fault.Refuse && spec.Hop == 0:
		r.refused, err = cutter.Refusing()
	case e.kernel != nil:
		var ln *net.TCPListener
		if ln, err = e.kernel.Listen(); err == nil {
			r.cutter, err = cutter.ListenOn(ln, e.ep.SSHAddr, spec.ID, cutter.WithLink(spec.Link), cutter.WithKernel(e.kernel))
		}
	default:
		r.cutter, err = cutter.Listen(e.ep.SSHAddr, spec.ID, cutter.WithLink(spec.Link))
	}
	switch {
	case err != nil:
		return err
	case r.refused != nil:
		r.addr = r.refused.Addr()
	case spec.Hop != 0:
		r.jumpAddr, r.addr = r.cutter.Addr(), r.targetAddr()
	default:
		r.addr = r.cutter.Addr()
	}
	return nil
}

// listenTarget opens the target's address behind the jump host: a second
// cutter, whose connections are numbered from control.JumpTargetConn, or for
// a dead target an address that refuses. The server's jump host connects to
// it from where the server runs (Endpoint.RigHost).
func (r *Run) listenTarget() error {
	e, spec := r.env, r.spec
	host := e.ep.RigHost
	if host == "" {
		return errors.New("this target's server cannot reach the rig's addresses, so it cannot be its own jump host: cases with a jump host need a target that sets Endpoint.RigHost")
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("the target's RigHost %q is not an IP address", host)
	}
	if spec.Moment == fault.Refuse {
		r.targetRefused, err = cutter.RefusingOn(ip)
		return err
	}
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	if err != nil {
		return err
	}
	r.target, err = cutter.ListenOn(ln, e.ep.SSHAddr, spec.ID, cutter.WithFirstConn(control.JumpTargetConn), cutter.WithLink(spec.Link))
	return err
}

// targetAddr is the target's address behind the jump host.
func (r *Run) targetAddr() string {
	if r.targetRefused != nil {
		return r.targetRefused.Addr()
	}
	return r.target.Addr()
}

// Dial connects to the case's address from where the tool lives: the rig's
// own network, or the kernel network's tool namespace.
func (r *Run) Dial(ctx context.Context, d *net.Dialer) (net.Conn, error) {
	addr := r.firstHop()
	if r.env.kernel != nil {
		return r.env.kernel.Dial(ctx, d, "tcp", addr)
	}
	return d.DialContext(ctx, "tcp", addr)
}

// DialTarget connects to the target the way a tool must: directly, or
// through the jump host (an SSH connection to JumpAddr with the tools' key
// and a tunnel to Addr, package jumpdial). The connection it returns
// carries the target's SSH exchange.
func (r *Run) DialTarget(ctx context.Context, d *net.Dialer) (net.Conn, error) {
	conn, err := r.Dial(ctx, d)
	if err != nil || r.jumpAddr == "" {
		return conn, err
	}
	if d.Timeout > 0 {
		conn.SetDeadline(time.Now().Add(d.Timeout))
	}
	tunnel, err := jumpdial.Through(ctx, conn, r.jumpAddr, r.ClientConfig(), r.addr)
	if err == nil {
		conn.SetDeadline(time.Time{}) // the timeout bounded the jump host's handshake only
	}
	return tunnel, err
}

// firstHop is the address the tool's connections go to first: the jump
// host's, or the target's.
func (r *Run) firstHop() string {
	if r.jumpAddr != "" {
		return r.jumpAddr
	}
	return r.addr
}

// Network is where the tool's connections must start, for tool.Target
// (Env.ToolNetwork).
func (r *Run) Network() tool.Network { return r.env.ToolNetwork() }

// ToolNetwork is where tools' connections must start: nil under the proxy,
// the tool's namespace under the kernel network.
func (e *Env) ToolNetwork() tool.Network {
	if e.kernel == nil {
		return nil
	}
	return toolSide{e.kernel}
}

// Net is the network this environment was started with.
func (e *Env) Net() Net { return e.opts.Net }

// toolSide is the kernel network's tool namespace as a tool.Network.
type toolSide struct{ k *kernelnet.Net }

func (s toolSide) Do(fn func() error) error { return s.k.InTool(fn) }

// setupRequest is the control request that sets case spec up on the
// server.
func setupRequest(spec Spec, sharedHost bool) control.Request {
	req := control.Request{Op: control.OpSetupCase, Case: spec.ID}
	// OutputBytes goes to the server whatever the moment: where output is
	// not the armed moment, the server announces it unheld.
	req.Arm = &control.Arm{Disposition: spec.Disposition, OutputBytes: spec.OutputBytes,
		WorkloadRequest: spec.WorkloadRequest, HoldCommand: spec.HoldCommand, Step: spec.Step, AnswerDelay: spec.AnswerDelay}
	if spec.Moment.HasCut() {
		req.Arm.Moment = spec.Moment
	}
	req.DenyExec = spec.Refusal == fault.DenyExec
	req.RejectSession = spec.Refusal == fault.RejectSession
	req.RefusePTY = spec.RefusePTY
	req.SharedHost = sharedHost
	return req
}

// makeCredential gives the case a key of its own and, for an expiring
// certificate, a certificate from the run's CA valid for an hour.
func (r *Run) makeCredential(req *control.Request) error {
	priv, signer, err := newKey()
	if err != nil {
		return err
	}
	block, err := gossh.MarshalPrivateKey(priv, "sshrig case key "+r.spec.ID)
	if err != nil {
		return err
	}
	r.identity = filepath.Join(r.env.keyDir, "id-"+r.spec.ID)
	if err := os.WriteFile(r.identity, pem.EncodeToMemory(block), 0o600); err != nil {
		return err
	}
	r.caseKey = signer
	switch r.spec.Credential {
	case fault.RevokedKey:
		req.CaseKeys = []string{string(gossh.MarshalAuthorizedKey(signer.PublicKey()))}
	case fault.ExpiredCertificate:
		now := time.Now()
		cert := &gossh.Certificate{
			Key:             signer.PublicKey(),
			Serial:          uint64(now.UnixNano()),
			CertType:        gossh.UserCert,
			KeyId:           r.spec.ID,
			ValidPrincipals: []string{r.env.opts.User},
			ValidAfter:      uint64(now.Add(-5 * time.Minute).Unix()),
			ValidBefore:     uint64(now.Add(time.Hour).Unix()),
		}
		if err := cert.SignCert(rand.Reader, r.env.ca); err != nil {
			return err
		}
		r.cert = r.identity + "-cert.pub"
		if err := os.WriteFile(r.cert, gossh.MarshalAuthorizedKey(cert), 0o600); err != nil {
			return err
		}
		if r.caseKey, err = gossh.NewCertSigner(cert, signer); err != nil {
			return err
		}
		req.CA = string(gossh.MarshalAuthorizedKey(r.env.ca.PublicKey()))
	}
	return nil
}

// useThenSpoil proves the case's credential works — a first connection,
// through the cutter, so the server's events show it accepted — and then
// spoils it (expires the certificate or revokes the key) before the tool
// calls. A credential that never worked would test nothing.
func (r *Run) useThenSpoil(ctx context.Context) error {
	conn, err := r.Dial(ctx, &net.Dialer{Timeout: 10 * time.Second})
	if err != nil {
		return fmt.Errorf("set-up connection: %w", err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	cfg := r.ClientConfig()
	cfg.Auth = []gossh.AuthMethod{gossh.PublicKeys(r.caseKey)}
	c, chans, reqs, err := gossh.NewClientConn(conn, r.addr, cfg)
	if err != nil {
		conn.Close()
		return fmt.Errorf("set-up connection: the credential did not work even once: %w", err)
	}
	gossh.NewClient(c, chans, reqs).Close()
	action := "revoke"
	if r.spec.Credential == fault.ExpiredCertificate {
		action = "expire"
	}
	return r.env.do(ctx, control.Request{Op: control.OpCredential, Case: r.spec.ID, Action: action})
}

// Identity is the private key file the tool must use: the run's, or the
// case's own for a credential scenario.
func (r *Run) Identity() string { return r.identity }

// Certificate is the case's certificate file, or "".
func (r *Run) Certificate() string { return r.cert }

// ToolReturned tells the run the tool has returned; a stall ends then.
func (r *Run) ToolReturned() { r.toolOnce.Do(func() { close(r.toolDone) }) }

func (r *Run) writeKnownHosts() error {
	r.knownHosts = filepath.Join(r.env.keyDir, "known_hosts-"+r.spec.ID)
	lines := knownhosts.Line([]string{knownhosts.Normalize(r.addr)}, r.pinned) + "\n"
	if r.jumpAddr != "" {
		// The jump host is the same server, with the same key.
		lines += knownhosts.Line([]string{knownhosts.Normalize(r.jumpAddr)}, r.pinned) + "\n"
	}
	return os.WriteFile(r.knownHosts, []byte(lines), 0o600)
}

// Spec is the case's spec.
func (r *Run) Spec() Spec { return r.spec }

// Addr is the address the tool must reach ("127.0.0.1:port"): the target,
// which a tool behind a jump host reaches through JumpAddr.
func (r *Run) Addr() string { return r.addr }

// JumpAddr is the address of the jump host the tool must reach Addr
// through, or "" when it dials Addr itself (Spec.Hop).
func (r *Run) JumpAddr() string { return r.jumpAddr }

// KnownHosts is a known_hosts file that pins the host key the tool is to
// expect at Addr: the server's, or for Spec.ChangedHostKey another.
func (r *Run) KnownHosts() string { return r.knownHosts }

// Wrap returns command wrapped with this case's markers.
func (r *Run) Wrap(command string) (string, error) {
	return markers.Wrap(r.spec.ID, r.env.ready.Ledger, command)
}

// ClientConfig returns an SSH client configuration with the tools' key and the
// host key the tool is to expect pinned (KnownHosts'), for in-process clients.
func (r *Run) ClientConfig() *gossh.ClientConfig {
	return &gossh.ClientConfig{
		User:            r.env.opts.User,
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(r.env.toolKey)},
		HostKeyCallback: gossh.FixedHostKey(r.pinned),
	}
}

// handle records one of the case's events (the Env's dispatcher calls it, in
// order) and starts the cut when the server holds.
func (r *Run) handle(evp *control.Event) {
	ev := *evp
	r.mu.Lock()
	r.events = append(r.events, ev)
	if ev.Kind == control.TransportLost {
		if ch := r.lostChLocked(ev.Conn); ch != closedCh {
			close(ch)
			r.lost[ev.Conn] = closedCh
		}
	}
	if r.heldAt.conn != 0 && r.settled != closedCh && (sessionKey{ev.Conn, ev.Session} == r.heldAt && settles(ev.Kind) || ev.Kind == control.CaseEnded) {
		close(r.settled)
		r.settled = closedCh
	}
	cut := ev.Kind == control.MomentReached && ev.Hold && !r.finishing
	if cut {
		r.cuts.Add(1)
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	if cut {
		switch {
		case r.spec.Cut == fault.Stall:
			go r.stallAt(ev)
		case r.spec.Cut.ServerSide():
			go r.faultAt(ev)
		default:
			go r.cutAt(ev)
		}
	}
	if ev.Kind == control.CaseEnded {
		r.stopWatching()
	}
}

// waitCuts waits for the run's cuts to end. None starts from now on: a hold
// announced later is the teardown's to end.
func (r *Run) waitCuts() {
	r.mu.Lock()
	r.finishing = true
	r.mu.Unlock()
	r.cuts.Wait()
}

func (r *Run) stopWatching() { r.watchOnce.Do(func() { close(r.watchDone) }) }

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (r *Run) lostChLocked(conn int) chan struct{} {
	ch := r.lost[conn]
	if ch == nil {
		ch = make(chan struct{})
		r.lost[conn] = ch
	}
	return ch
}

// sessionKey names one session of one connection of the case.
type sessionKey struct{ conn, session int }

// settles reports whether an event ends the server's indecision about an exec
// request it held: it skipped the command, started it, or gave up on it.
func settles(k control.EventKind) bool {
	return k == control.ExecSkipped || k == control.ProcSpawned || k == control.ExecFinished
}

// testHookBeforeCut, set by tests only, runs as a cut begins: a test
// stands for a rig too starved to cut at once.
var testHookBeforeCut func(r *Run, ev control.Event)

// cutAt cuts the held connection once the server's bytes reached the client,
// waits for the server to see the transport drop where it can, and releases.
//
// At exec the server holds a request it has not yet decided: a real server
// would decide it the instant the transport died. So that nothing the tool
// sends afterwards (a reconcile probe on a new connection) can observe the
// rig's hold instead of that decision, new connections wait in the cutter
// from the cut until the server has skipped or started the command.
func (r *Run) cutAt(ev control.Event) {
	defer r.cuts.Done()
	if testHookBeforeCut != nil {
		testHookBeforeCut(r, ev)
	}
	if ev.Moment == fault.Exec {
		r.mu.Lock()
		r.heldAt = sessionKey{ev.Conn, ev.Session}
		r.mu.Unlock()
		for _, c := range []*cutter.Cutter{r.cutter, r.target} {
			if c != nil {
				c.HoldNew()
				defer c.OpenNew()
			}
		}
	}
	rec := &CutRecord{Moment: ev.Moment, Kind: r.spec.Cut, Conn: ev.Conn, HoldSeq: ev.Seq, EventTime: ev.Time, Sent: ev.Sent}
	// Which connection is cut, after how many of its bytes: the held one,
	// or behind a jump host the hop's.
	cut, conn, flush := r.cutter, ev.Conn, ev.Sent
	switch r.spec.Hop {
	case fault.JumpTarget:
		cut = r.target
	case fault.ClientJump:
		conn, flush = ev.Via, ev.ViaSent
		rec.Hop, rec.HeldConn, rec.Conn, rec.Sent = fault.ClientJump, ev.Conn, ev.Via, ev.ViaSent
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.env.opts.FlushTimeout)
	var err error
	switch {
	case r.spec.Hop == fault.ClientJump && ev.Via == 0:
		err = fmt.Errorf("the target's connection %d came through no tunnel of the jump host's", ev.Conn)
	case r.spec.Hop == fault.ClientJump && ev.ViaSent == 0:
		// The server says 0 when the tunnel ended before it relayed the
		// target's bytes (server/jump.go, holdVia), which only the tool
		// can have done: it closed the tunnel or its connection.
		err = fmt.Errorf("%w: the tunnel ended before it relayed the target's %d bytes", cutter.ErrConnClosed, ev.Sent)
	case r.spec.Cut.HelperCut():
		start := time.Now()
		var st cutter.ConnStats
		st, err = cut.WaitDelivered(ctx, conn, flush)
		rec.FlushWait, rec.Delivered = time.Since(start), st.ToClient
		if err == nil {
			rec.Helpers, err = signalHelper(ctx, st, int(r.toolPID.Load()), r.env.ToolNetwork(), r.spec.Cut)
			rec.NoHelper = errors.Is(err, ErrNoHelper)
			if r.spec.Cut == fault.WedgeHelper {
				r.mu.Lock()
				r.wedged = append(r.wedged, rec.Helpers...)
				r.mu.Unlock()
			}
		}
		rec.CutTime = time.Now()
	default:
		var rep cutter.Report
		rep, err = cut.Cut(ctx, conn, r.spec.Cut, flush)
		rec.CutTime, rec.Delivered, rec.FlushWait, rec.Unsent = rep.At, rep.Delivered, rep.FlushWait, rep.Unsent
	}
	cancel()
	if err != nil {
		rec.Err = err.Error()
		// The server holds, so it closes nothing of the connection itself:
		// a connection that ended, or a socket nobody owns, is the tool's
		// doing.
		rec.ToolLeft = errors.Is(err, cutter.ErrConnClosed) || errors.Is(err, errNoOwner)
	} else {
		rec.Latency = rec.CutTime.Sub(ev.Time)
		if r.spec.Cut.DropsTransport() && lossSeenWhileHeld(ev.Moment) {
			r.mu.Lock()
			ch := r.lostChLocked(ev.Conn)
			r.mu.Unlock()
			t := time.NewTimer(r.env.opts.LossTimeout)
			select {
			case <-ch:
				rec.ServerSawLoss = true
			case <-t.C:
			case <-r.ctx.Done():
			}
			t.Stop()
		}
	}
	r.release(ev, rec)
	if ev.Moment == fault.Exec {
		r.mu.Lock()
		settled := r.settled
		r.mu.Unlock()
		t := time.NewTimer(r.env.opts.LossTimeout)
		select {
		case <-settled:
		case <-t.C:
		case <-r.ctx.Done():
		}
		t.Stop()
	}
	r.record(rec)
}

// Events returns the case's events recorded so far.
func (r *Run) Events() []control.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]control.Event(nil), r.events...)
}

// lossSeenWhileHeld reports whether the server reads its connection while it
// holds at m, and so sees a dropped transport before the release. At accept
// nothing reads yet; during the key exchange the SSH library's reader may be
// waiting for the very write the server holds back.
func lossSeenWhileHeld(m fault.Moment) bool {
	return m != fault.Accept && m != fault.Handshake
}

// stallAt keeps the server holding, the connection up, until the tool has
// returned: the answer comes later than the tool's deadline.
func (r *Run) stallAt(ev control.Event) {
	defer r.cuts.Done()
	rec := &CutRecord{Moment: ev.Moment, Stall: true, Conn: ev.Conn, HoldSeq: ev.Seq, EventTime: ev.Time, Sent: ev.Sent}
	select {
	case <-r.toolDone:
		rec.CutTime = time.Now()
	case <-r.ctx.Done():
		rec.Err = "the case ended before the tool returned"
	}
	r.release(ev, rec)
	r.record(rec)
}

// faultAt has the server make the far side's fault at the hold (a crash,
// its host's reboot, a withheld exit status) once the server's bytes reached
// the client, as a cut waits for them, and releases the hold. A reboot's
// host stays down for its pause: the cutter silences the case's
// connections first, so nothing the server does to them reaches the tool,
// and when the host is back the tool's next segment on them meets an RST.
func (r *Run) faultAt(ev control.Event) {
	defer r.cuts.Done()
	rec := &CutRecord{Moment: ev.Moment, Kind: r.spec.Cut, Conn: ev.Conn, HoldSeq: ev.Seq, EventTime: ev.Time, Sent: ev.Sent}
	ctx, cancel := context.WithTimeout(r.ctx, r.env.opts.FlushTimeout)
	start := time.Now()
	st, err := r.cutter.WaitDelivered(ctx, ev.Conn, ev.Sent)
	cancel()
	rec.FlushWait, rec.Delivered = time.Since(start), st.ToClient
	if err != nil {
		rec.ToolLeft = errors.Is(err, cutter.ErrConnClosed)
	}
	reboot := r.spec.Cut == fault.Reboot
	restarts := reboot && r.env.restartsForReal()
	if err == nil && reboot {
		r.cutter.Down()
	}
	switch {
	case err == nil && restarts:
		rec.CutTime = time.Now()
		rec.Latency = rec.CutTime.Sub(ev.Time)
		rctx, rcancel := context.WithTimeout(r.ctx, r.spec.rebootPause()+restartTimeout)
		rec.Restart, err = r.restart(rctx, r.spec.rebootPause())
		rcancel()
		rec.ServerSawLoss = err == nil
	case err == nil:
		fctx, fcancel := context.WithTimeout(r.ctx, 10*time.Second)
		err = r.env.do(fctx, control.Request{Op: control.OpFault, Case: r.spec.ID, Seq: ev.Seq, Fault: r.spec.Cut})
		fcancel()
		rec.CutTime = time.Now()
		rec.Latency = rec.CutTime.Sub(ev.Time)
		rec.ServerSawLoss = err == nil && r.spec.Cut.DropsTransport()
	}
	if reboot {
		// The host comes back after its pause whatever happened: a cutter
		// left down would hold the tool's reconnection for ever. A real
		// restart kept it down for its pause already.
		if err == nil && !restarts {
			t := time.NewTimer(r.spec.rebootPause())
			select {
			case <-t.C:
			case <-r.ctx.Done():
			}
			t.Stop()
		}
		r.cutter.Up()
	}
	if err != nil {
		rec.Err = err.Error()
	}
	if restarts {
		// The hold died with the server that held: nothing to release.
		rec.Released = time.Now()
	} else {
		r.release(ev, rec)
	}
	r.record(rec)
}

// release ends the server's hold announced by ev, whatever the cut did
// there, and notes when in rec (with the release's own failure, if the cut
// had none).
func (r *Run) release(ev control.Event, rec *CutRecord) {
	relCtx, relCancel := context.WithTimeout(r.ctx, 10*time.Second)
	if err := r.env.do(relCtx, control.Request{Op: control.OpRelease, Case: r.spec.ID, Seq: ev.Seq}); err != nil && rec.Err == "" {
		rec.Err = "release: " + err.Error()
	}
	relCancel()
	rec.Released = time.Now()
}

// record keeps rec as the case's cut (the first one only) and says the cut
// is done.
func (r *Run) record(rec *CutRecord) {
	r.mu.Lock()
	if r.cut == nil {
		r.cut = rec
		close(r.cutDone)
	}
	r.mu.Unlock()
}

// CutDone is closed once the cut at the armed moment happened (or failed) and
// the server's hold was released. It never closes for none and refuse.
func (r *Run) CutDone() <-chan struct{} { return r.cutDone }

// Evidence is everything the engine learned about a case run.
type Evidence struct {
	Spec   Spec            `json:"-"`
	Events []control.Event `json:"events"`
	Cut    *CutRecord      `json:"cut,omitempty"`
	// Landed: the cut happened at its moment (always true for none).
	Landed bool `json:"landed"`
	// NotLanded says why the cut did not land; NeverReached that it did
	// not because the exchange never reached the case's moment (the
	// caller gave up or went elsewhere before it); LeftBeforeCut that it
	// reached the moment and the tool was gone before the cut
	// (CutRecord.ToolLeft).
	NotLanded     string `json:"not_landed,omitempty"`
	NeverReached  bool   `json:"never_reached,omitempty"`
	LeftBeforeCut bool   `json:"left_before_cut,omitempty"`
	// MissedOnTiming: the cut did not land for a reason that rests on the
	// machine's schedule, which a starved tool or rig meets without a
	// defect: NeverReached, LeftBeforeCut, a server that did not see its
	// transport drop within Options.LossTimeout, or a reset whose send
	// queue had not drained in time (CutRecord.Unsent). A run alone says
	// whether it was the schedule's.
	MissedOnTiming bool `json:"missed_on_timing,omitempty"`
	// Settled: every command the server ran for the case had ended when
	// the ledger was read. When false, a survivor may still be running.
	Settled bool            `json:"settled"`
	Truth   reconcile.Truth `json:"truth"`
	// Ledger is the case's lines of the ledger as read over SSH at the end of
	// the case.
	Ledger *markers.Ledger `json:"-"`
	// OutOfBand is the ledger as read around SSH (from the container), when
	// the target can.
	OutOfBand *markers.Ledger `json:"-"`
	// ProbeErr is set when the ledger could not be read.
	ProbeErr string `json:"probe_error,omitempty"`
}

// Finish waits (at most settle) for the case's commands to end, reads the
// truth, ends the case on the server and closes the cutter.
func (r *Run) Finish(ctx context.Context, settle time.Duration) (*Evidence, error) {
	ev := &Evidence{Spec: r.spec}
	r.ToolReturned() // whoever finishes is done with the tool
	// A ping's reply follows every event the server emitted before it, so
	// afterwards the record is complete up to now.
	if err := r.catchUp(ctx); err != nil {
		r.abort()
		return nil, err
	}
	if r.env.restartsForReal() {
		// A restart of the case's host must be over before its truth is
		// read, from the server that came back; and the record must hold
		// what that server saw since.
		r.waitCuts()
		if err := r.catchUp(ctx); err != nil {
			r.abort()
			return nil, err
		}
	}
	ev.Settled = r.waitSettled(ctx, settle)

	// Only the case's own lines are read: the ledger grows by every case
	// run, and the truth is about this id alone.
	ev.Ledger, ev.OutOfBand, ev.ProbeErr = r.env.readLedgers(ctx, r.spec.ID)
	ledger := ev.Ledger

	// Our own cuts must be finished before the case ends (a release of a
	// hold that the teardown ended would be an error).
	r.waitCuts()
	endErr := r.end(ctx)
	r.mu.Lock()
	ev.Events = append([]control.Event(nil), r.events...)
	ev.Cut = r.cut
	r.mu.Unlock()
	ev.Truth = truthOf(r.spec.ID, ledger, ev.OutOfBand, ev.Events)
	var onTiming bool
	ev.Landed, ev.NotLanded, onTiming = r.judgeLanding(ev)
	ev.NeverReached = !ev.Landed && ev.Cut == nil && r.spec.Moment.HasCut()
	ev.LeftBeforeCut = !ev.Landed && ev.Cut != nil && ev.Cut.ToolLeft
	ev.MissedOnTiming = !ev.Landed && (onTiming || ev.NeverReached || ev.LeftBeforeCut)
	return ev, endErr
}

// catchUp makes the case's record complete up to now: a ping's reply
// follows every event the server emitted before it, and those events may
// still be on their way to handle (a hold among them must get its cut).
func (r *Run) catchUp(ctx context.Context) error {
	if err := r.env.do(ctx, control.Request{Op: control.OpPing}); err != nil {
		return err
	}
	return r.env.caughtUp(ctx)
}

// readLedgers reads the ledger's lines of id over the rig's probe
// connection and, where the target offers it, out of band; probeErr says
// what failed.
func (e *Env) readLedgers(ctx context.Context, id string) (overSSH, outOfBand *markers.Ledger, probeErr string) {
	overSSH, err := e.readOverSSH(ctx, id)
	if err != nil {
		probeErr = err.Error()
	}
	if overSSH != nil {
		if raw, err := e.readLedgerOf(ctx, id); err != nil {
			probeErr = "out-of-band ledger read: " + err.Error()
		} else if raw != nil {
			outOfBand = markers.ParseBytes(raw)
		}
	}
	return overSSH, outOfBand, probeErr
}

// readOverSSH reads id's ledger lines on the probe connection: from the
// follower, or, where there is none or it broke, with a session of its own.
func (e *Env) readOverSSH(ctx context.Context, id string) (*markers.Ledger, error) {
	link := e.link.Load()
	if link.follower != nil {
		if l, err := link.follower.Lines(ctx, id); err == nil {
			return l, nil
		}
	}
	return reconcile.ReadLedgerOf(ctx, link.probe, e.ready.Ledger, id)
}

// truthOf is the truth about id from its two sources, the ledger (read over
// SSH, and compared with the out-of-band reading where there is one) and the
// server's process events: the one derivation Finish and TruthNow share.
func truthOf(id string, ledger, outOfBand *markers.Ledger, events []control.Event) reconcile.Truth {
	t := reconcile.Derive(id, ledger, evidence.Of(events, id).Processes())
	if outOfBand != nil {
		if diff := compareLedgers(id, ledger, outOfBand); diff != "" {
			t.Disagreement = joinReasons(t.Disagreement, diff)
		}
	}
	return t
}

// TruthNow establishes the truth for id as it stands, without ending its
// case, as Finish does at the end of one: events are the server's events of
// id's case up to now (the caller's subscription, drained after a ping).
func (e *Env) TruthNow(ctx context.Context, id string, events []control.Event) (reconcile.Truth, error) {
	ledger, outOfBand, probeErr := e.readLedgers(ctx, id)
	if probeErr != "" {
		return reconcile.Truth{}, fmt.Errorf("read the ledger: %s", probeErr)
	}
	return truthOf(id, ledger, outOfBand, events), nil
}

func (r *Run) waitSettled(ctx context.Context, settle time.Duration) bool {
	t := time.NewTimer(settle)
	defer t.Stop()
	for {
		r.mu.Lock()
		ok := evidence.Settled(r.events)
		r.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-r.changed:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// end asks the server to end the case and waits until it reports it ended.
func (r *Run) end(ctx context.Context) error {
	defer r.closeLocal()
	if err := r.env.do(ctx, control.Request{Op: control.OpEndCase, Case: r.spec.ID}); err != nil {
		return err
	}
	select {
	case <-r.watchDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("engine: case %s did not end: %w", r.spec.ID, ctx.Err())
	}
}

// abort ends the case without collecting evidence.
func (r *Run) abort() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.end(ctx)
}

func (r *Run) closeLocal() {
	r.closeOnce.Do(r.closeLocalOnce)
}

func (r *Run) closeLocalOnce() {
	r.env.runsMu.Lock()
	mine := r.env.runs[r.spec.ID] == r
	if mine {
		delete(r.env.runs, r.spec.ID)
	}
	r.env.runsMu.Unlock()
	if f := r.env.link.Load().follower; mine && f != nil {
		f.Forget(r.spec.ID)
	}
	r.stopWatching()
	r.cancel()
	r.waitCuts()
	r.killWedged()
	if r.cutter != nil {
		r.cutter.Close()
	}
	if r.refused != nil {
		r.refused.Close()
	}
	if r.target != nil {
		r.target.Close()
	}
	if r.targetRefused != nil {
		r.targetRefused.Close()
	}
	if r.knownHosts != "" {
		os.Remove(r.knownHosts)
	}
	if mine && r.env.parent != nil {
		r.env.closeOwnHost() // the case's own host ends with it
	}
}

// judgeLanding says whether the cut landed, why not, and whether the
// reason is a deadline the schedule can miss (a loss not seen within
// LossTimeout, a send queue not drained in time) rather than a fact.
func (r *Run) judgeLanding(ev *Evidence) (landed bool, why string, onTiming bool) {
	switch r.spec.Moment {
	case fault.None:
		return true, "", false
	case fault.Refuse:
		if evidence.Connected(ev.Events) {
			return false, "a connection reached the server although nothing should accept it", false
		}
		return true, "", false
	}
	c := ev.Cut
	switch {
	case c == nil:
		return false, fmt.Sprintf("the exchange never reached the %s moment", r.spec.Moment), false
	case c.Moment != r.spec.Moment:
		return false, fmt.Sprintf("the server held at %s, not %s", c.Moment, r.spec.Moment), false
	case c.Err != "":
		return false, "the cut failed: " + c.Err, false
	case c.Kind == fault.NoExitStatus || c.Kind == fault.EOFOnly:
		if !slices.ContainsFunc(ev.Events, func(e control.Event) bool { return e.Kind == control.ExitWithheld && e.Conn == c.Conn }) {
			return false, fmt.Sprintf("the server made %s at the hold but never withheld the exit status", c.Kind), false
		}
		return true, "", false
	case c.Stall, c.Kind.ServerSide():
		return true, "", false
	case c.Discarded() && c.Delivered-c.Unsent < c.Sent:
		return false, fmt.Sprintf("the reset discarded %d bytes still in the cutter's send queue: the client got %d of the %d the server had sent at the moment", c.Unsent, c.Delivered-c.Unsent, c.Sent), true
	case r.spec.Cut.DropsTransport() && lossSeenWhileHeld(r.spec.Moment) && !c.ServerSawLoss:
		return false, fmt.Sprintf("the server did not see its transport drop within %s of the cut", r.env.opts.LossTimeout), true
	}
	return true, "", false
}

// DialTool connects an in-process SSH client to the case the way a tool would,
// with the tools' key and the host key pinned. timeout bounds connect and
// handshake.
func (r *Run) DialTool(ctx context.Context, timeout time.Duration) (*gossh.Client, error) {
	conn, err := r.DialTarget(ctx, &net.Dialer{Timeout: timeout})
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(timeout))
	c, chans, reqs, err := gossh.NewClientConn(conn, r.addr, r.ClientConfig())
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return gossh.NewClient(c, chans, reqs), nil
}

// compareLedgers says how two readings of the ledger differ for id, or "".
func compareLedgers(id string, overSSH, outOfBand *markers.Ledger) string {
	lines := func(l *markers.Ledger) []string {
		var out []string
		for _, e := range l.Entries {
			if e.ID == id {
				out = append(out, e.String())
			}
		}
		return out
	}
	a, b := lines(overSSH), lines(outOfBand)
	if strings.Join(a, "\n") == strings.Join(b, "\n") {
		return ""
	}
	return fmt.Sprintf("the ledger read over SSH has %d marker(s) for this id %q, read out of band %d %q", len(a), a, len(b), b)
}

func joinReasons(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// ErrNoHelper is returned for a kill-helper cut when the tool's client socket
// belongs to the tool itself (or to the rig's process, for an in-process
// tool): there is no helper process to kill.
var ErrNoHelper = errors.New("engine: the tool holds its SSH socket itself; kill-helper needs a helper process (such as the ssh child of a wrapper) to kill")

// errNoOwner: a kill-helper cut found the tool's socket owned by no
// process (the tool closed it first).
var errNoOwner = errors.New("kill-helper: no process owns the tool's socket")

// SetToolPID tells the run which process is the tool itself, so a
// kill-helper cut never mistakes the tool for its helper.
func (r *Run) SetToolPID(pid int) { r.toolPID.Store(int64(pid)) }

// signalHelper makes helper cut kind of the local processes that own the
// tool's end of the connection (for a wrapper script, its ssh child; for a
// ControlMaster, the master): KillHelper kills them and ExpireHelper ends
// them (SIGTERM), each waiting until they are gone; WedgeHelper stops them
// and waits until they are stopped. The rig's own process and the tool's
// are never touched. It looks again after each kill: a helper that forked
// as it was found (OpenSSH's ControlPersist puts its master in the
// background right after authentication) leaves a child holding the
// socket, and the transport dies only with the last holder. A stopped
// holder keeps the socket: one round stops them all.
func signalHelper(ctx context.Context, st cutter.ConnStats, toolPID int, tn tool.Network, kind fault.Cut) ([]int, error) {
	sig := map[fault.Cut]unix.Signal{fault.KillHelper: unix.SIGKILL, fault.ExpireHelper: unix.SIGTERM, fault.WedgeHelper: unix.SIGSTOP}[kind]
	if sig == 0 {
		return nil, fmt.Errorf("engine: %v is not a helper cut", kind)
	}
	// The tool's socket is listed in the namespace it lives in.
	var ino uint64
	err := tool.Within(tn, func() error {
		var err error
		ino, err = sockowner.Inode(st.Client, st.Listener)
		return err
	})
	switch {
	case errors.Is(err, sockowner.ErrNotFound) || err == nil && ino == 0:
		// Gone, or left to the kernel (TIME_WAIT): the tool closed it.
		return nil, fmt.Errorf("%w %s -> %s", errNoOwner, st.Client, st.Listener)
	case err != nil:
		return nil, fmt.Errorf("kill-helper: the tool's socket: %w", err)
	}
	var killed []int
	for round := 0; ; round++ {
		owners, err := sockowner.Owners(ino)
		if err != nil {
			return killed, fmt.Errorf("kill-helper: %w", err)
		}
		var victims []int
		for _, pid := range owners {
			if pid != os.Getpid() && pid != toolPID {
				victims = append(victims, pid)
			}
		}
		switch {
		case len(victims) == 0 && round > 0:
			return killed, nil
		case len(victims) == 0 && len(owners) > 0:
			return nil, ErrNoHelper
		case len(victims) == 0:
			return nil, fmt.Errorf("%w %s -> %s", errNoOwner, st.Client, st.Listener)
		case sig == unix.SIGSTOP && round > 0:
			return killed, nil // stopped, they still hold it
		case round == 3:
			return killed, fmt.Errorf("%v: processes %v still hold the tool's socket after %d rounds", kind, victims, round)
		}
		killed = append(killed, victims...)
		if err := sockowner.Signal(ctx, victims, sig); err != nil {
			return killed, err
		}
	}
}

// killWedged kills the helpers a WedgeHelper cut stopped: nothing else ever
// would, and the case must leave no process behind.
func (r *Run) killWedged() {
	r.mu.Lock()
	pids := r.wedged
	r.wedged = nil
	r.mu.Unlock()
	if len(pids) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		sockowner.Kill(ctx, pids)
		cancel()
	}
}
