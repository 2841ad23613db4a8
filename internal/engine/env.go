package engine

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/kernelnet"
	"github.com/sshrig/sshrig/internal/tempdir"
	"github.com/sshrig/sshrig/reconcile"
)

// Options configure an Env.
type Options struct {
	Launcher Launcher // default InProcess{}
	User     string   // the user tools log in as; default "sshrig"
	// FlushTimeout bounds how long a cut waits for the server's bytes to
	// reach the client. Default 5s.
	FlushTimeout time.Duration
	// LossTimeout bounds how long a cut waits for the server to see its
	// transport drop before the hold is released anyway (the case is then
	// inconclusive). Default 5s.
	LossTimeout time.Duration
	// Net is where the tool meets the server: NetProxy (the default) or
	// NetKernel.
	Net Net
}

// Net is where the tool meets the server, and who makes a cut.
type Net string

const (
	// NetProxy: the tool dials the case's cutter on the rig's loopback;
	// the cutter makes every cut on its own sockets.
	NetProxy Net = "proxy"
	// NetKernel: the tool lives in a network namespace of its own and
	// reaches the case's cutter, in the server's namespace, across a veth
	// pair; blackhole, reset and vanish are made by the server side's
	// kernel (kernelnet).
	NetKernel Net = "kernel"
)

// Nets lists the valid values of Net.
func Nets() []Net { return []Net{NetProxy, NetKernel} }

// ParseNet parses a --net value.
func ParseNet(s string) (Net, error) {
	for _, n := range Nets() {
		if string(n) == s {
			return n, nil
		}
	}
	return "", fmt.Errorf("unknown network %q (valid: proxy, kernel)", s)
}

// Env is one running server with its control connection, per-run keys and a
// probe connection: the environment every case of a run shares.
type Env struct {
	opts    Options
	ep      *Endpoint
	token   []byte // the server's control token
	ready   control.Ready
	hostKey gossh.PublicKey
	// link is the connection to the server's current start: a server
	// that restarted (Endpoint.Reboot) gets a new one (reattach).
	link     atomic.Pointer[serverLink]
	keyDir   string // private: identity file and known_hosts files
	identity string // the tools' private key file
	toolKey  gossh.Signer
	ca       gossh.Signer // signs case certificates
	probeID  string
	probeKey gossh.Signer
	// parent is set for the Env of a case's own host (ownHost): the run's
	// Env, whose keys and kernel network it shares and its Close leaves
	// alone.
	parent *Env
	// Hosts of one case's own (ownHost) not yet closed, which Close
	// closes: a run interrupted before their cases ended.
	ownMu       sync.Mutex
	ownHosts    map[*Env]bool
	ownObserver func(control.Event) // ObserveOwnHosts
	// rebooting is closed when a real restart in flight has reattached
	// (or failed); nil when none is in flight.
	rebootMu  sync.Mutex
	rebooting chan struct{}
	nextID    atomic.Uint64
	// sharedHost: cases begun from now on share one host (ShareOneHost).
	sharedHost atomic.Bool
	runTag     string
	// kernel is the kernel network under NetKernel, nil under NetProxy.
	kernel   *kernelnet.Net
	runsMu   sync.Mutex
	runs     map[string]*Run // begun and not yet finished, by case id
	closeErr error
	closed   sync.Once
}

// serverLink is the rig's connection to one start of the server: its
// control connection, the dispatch of its events to the runs, and the
// probe connection.
type serverLink struct {
	sshAddr string
	ctl     *control.Client
	tap     *control.Subscription
	tapDone chan struct{}
	probe   *gossh.Client
	// follower reads the ledger's new lines over the probe connection for
	// each truth; nil where the target's shell could not start it (or on
	// a case's own host, whose ledger is the case's alone), and then every
	// reading opens a session of its own.
	follower *reconcile.Follower
	// dispatched counts the events dispatch has taken from tap and handed
	// to their runs; dispatchedCh is closed (and replaced) at every one,
	// under dispatchMu.
	dispatchMu   sync.Mutex
	dispatched   uint64
	dispatchedCh chan struct{}
}

// close ends the link's probe, dispatch and control connection.
func (l *serverLink) close() {
	if l.follower != nil {
		l.follower.Close()
	}
	if l.probe != nil {
		l.probe.Close()
	}
	if l.tap != nil {
		l.tap.Close()
		<-l.tapDone
	}
	if l.ctl != nil {
		l.ctl.Close()
	}
}

// Start launches a server and connects to it.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	if opts.Launcher == nil {
		opts.Launcher = InProcess{}
	}
	if opts.User == "" {
		opts.User = "sshrig"
	}
	if opts.FlushTimeout == 0 {
		opts.FlushTimeout = 5 * time.Second
	}
	if opts.LossTimeout == 0 {
		opts.LossTimeout = 5 * time.Second
	}
	if opts.Net == "" {
		opts.Net = NetProxy
	}
	if _, err := ParseNet(string(opts.Net)); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Env{opts: opts, runTag: randomHex(4), runs: map[string]*Run{}, ownHosts: map[*Env]bool{}}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	e.token = make([]byte, 32)
	rand.Read(e.token)
	if e.keyDir, err = tempdir.Make("keys"); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if opts.Net == NetKernel {
		if e.kernel, err = kernelnet.New(ctx); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	toolPriv, toolSigner, err := newKey()
	if err != nil {
		return nil, err
	}
	e.toolKey = toolSigner
	block, err := gossh.MarshalPrivateKey(toolPriv, "sshrig tool key "+e.runTag)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.identity = filepath.Join(e.keyDir, "id_ed25519")
	if err := os.WriteFile(e.identity, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if _, e.probeKey, err = newKey(); err != nil {
		return nil, err
	}
	if _, e.ca, err = newKey(); err != nil {
		return nil, err
	}
	// The probe has a case of its own, so its sessions are never mistaken
	// for a tool's, and it reaches the server directly, not through a cutter.
	e.probeID = "rig-probe-" + e.runTag
	if e.ep, err = opts.Launcher.Launch(ctx, e.token); err != nil {
		return nil, err
	}
	if err := e.attach(ctx, e.ep.SSHAddr, e.ep.ControlAddr); err != nil {
		return nil, err
	}
	return e, nil
}

// attach connects to a start of the server listening at sshAddr and
// ctlAddr: the control connection and its dispatch, the run's keys, the
// probe. A server that restarted must be the one it was: the same host key
// and ledger.
func (e *Env) attach(ctx context.Context, sshAddr, ctlAddr string) (err error) {
	l := &serverLink{sshAddr: sshAddr, dispatchedCh: make(chan struct{})}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.ctl, err = control.Dial(ctx, ctlAddr, e.token); err != nil {
		return err
	}
	ready := l.ctl.Ready()
	l.tap = l.ctl.Tap()
	l.tapDone = make(chan struct{})
	go e.dispatch(l)
	hostKey, _, _, _, err := gossh.ParseAuthorizedKey([]byte(ready.HostKey))
	if err != nil {
		return fmt.Errorf("engine: server host key: %w", err)
	}
	if e.hostKey == nil {
		e.ready, e.hostKey = ready, hostKey
	} else if !bytes.Equal(hostKey.Marshal(), e.hostKey.Marshal()) || ready.Ledger != e.ready.Ledger {
		return fmt.Errorf("engine: the server came back with host key %s and ledger %s, not %s and %s", gossh.FingerprintSHA256(hostKey), ready.Ledger, gossh.FingerprintSHA256(e.hostKey), e.ready.Ledger)
	}
	keys := []string{
		string(gossh.MarshalAuthorizedKey(e.toolKey.PublicKey())),
		string(gossh.MarshalAuthorizedKey(e.probeKey.PublicKey())),
	}
	if err := l.ctl.Do(ctx, control.Request{Op: control.OpAuthorize, User: e.opts.User, Keys: keys}); err != nil {
		return err
	}
	if err := l.ctl.Do(ctx, control.Request{Op: control.OpSetupCase, Case: e.probeID, Probe: true}); err != nil {
		return err
	}
	if l.probe, err = e.dialDirect(ctx, sshAddr, e.probeID, e.probeKey); err != nil {
		return fmt.Errorf("engine: probe connection: %w", err)
	}
	if e.parent == nil {
		if f, err := reconcile.Follow(ctx, l.probe, e.ready.Ledger); err == nil {
			l.follower = f
		}
	}
	e.link.Store(l)
	return nil
}

func newKey() (ed25519.PrivateKey, gossh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: key: %w", err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: key: %w", err)
	}
	return priv, s, nil
}

// dialDirect opens an SSH connection straight to the server at sshAddr
// for caseID.
func (e *Env) dialDirect(ctx context.Context, sshAddr, caseID string, signer gossh.Signer) (*gossh.Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", sshAddr)
	if err != nil {
		return nil, err
	}
	if err := control.WritePreamble(conn, control.Preamble{Case: caseID, Conn: 1}); err != nil {
		conn.Close()
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c, chans, reqs, err := gossh.NewClientConn(conn, sshAddr, &gossh.ClientConfig{
		User:            e.opts.User,
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.FixedHostKey(e.hostKey),
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return gossh.NewClient(c, chans, reqs), nil
}

// dispatch hands every event of link l to the run of its case, in server
// order. One goroutine for all runs: a run has no goroutine of its own
// until it cuts.
func (e *Env) dispatch(l *serverLink) {
	defer close(l.tapDone)
	for {
		ev, err := l.tap.Next(context.Background())
		if err != nil {
			return
		}
		if e.parent != nil {
			e.parent.observed(ev)
		}
		e.runsMu.Lock()
		r := e.runs[ev.Case]
		e.runsMu.Unlock()
		if r != nil {
			evp := new(control.Event)
			*evp = ev
			r.handle(evp)
		}
		l.dispatchMu.Lock()
		l.dispatched++
		close(l.dispatchedCh)
		l.dispatchedCh = make(chan struct{})
		l.dispatchMu.Unlock()
	}
}

// caughtUp waits until dispatch has handed on every event its tap had been
// given when it was called: after a control request's reply, every event the
// server emitted before it has reached its run.
func (e *Env) caughtUp(ctx context.Context) error {
	l := e.link.Load()
	want := l.tap.Pushed()
	for {
		l.dispatchMu.Lock()
		done, ch := l.dispatched >= want, l.dispatchedCh
		l.dispatchMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-l.tapDone:
			return errors.New("engine: the control connection ended")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ShareOneHost makes every case begun from now on run on the server's one
// shared host (its scratch directory as home, the machine's /tmp), as the
// probe does, instead of a fresh host of its own: for a sequence of cases
// that must see one host's state, as reconciliation's set-up, operation and
// probe do.
func (e *Env) ShareOneHost() { e.sharedHost.Store(true) }

// Control is the control connection, for callers that want every event.
func (e *Env) Control() *control.Client { return e.link.Load().ctl }

// Ready is what the server said about itself (ledger path, scratch, shell).
func (e *Env) Ready() control.Ready { return e.ready }

// HostKey is the server's host key, which tools must pin.
func (e *Env) HostKey() gossh.PublicKey { return e.hostKey }

// User is the user name tools log in as.
func (e *Env) User() string { return e.opts.User }

// Identity is the path of the tools' private key file (OpenSSH format).
func (e *Env) Identity() string { return e.identity }

// ToolSigner is the tools' key, for in-process tools.
func (e *Env) ToolSigner() gossh.Signer { return e.toolKey }

// Endpoint describes where the server runs.
func (e *Env) Endpoint() *Endpoint { return e.ep }

// NewID returns a fresh id for a case run: random, never derived from a
// secret, never reused.
func (e *Env) NewID() string {
	return fmt.Sprintf("c-%s-%04d-%s", e.runTag, e.nextID.Add(1), randomHex(3))
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Close ends the probe, the control connection and the server, and removes
// the key directory. It is safe to call more than once.
func (e *Env) Close() error {
	e.closed.Do(func() {
		var errs []error
		// Runs nobody finished still own cutters and goroutines.
		// Taken out of runs, so that closing them leaves this Env's
		// closing to this call (a case's own host ends with its run
		// otherwise).
		e.runsMu.Lock()
		open := make([]*Run, 0, len(e.runs))
		for _, r := range e.runs {
			open = append(open, r)
		}
		clear(e.runs)
		e.runsMu.Unlock()
		for _, r := range open {
			r.closeLocal()
		}
		e.ownMu.Lock()
		hosts := make([]*Env, 0, len(e.ownHosts))
		for h := range e.ownHosts {
			hosts = append(hosts, h)
		}
		e.ownMu.Unlock()
		for _, h := range hosts {
			errs = append(errs, h.Close())
		}
		if l := e.link.Load(); l != nil {
			l.close()
		}
		if e.ep != nil && e.ep.Stop != nil {
			if err := e.ep.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("engine: stop server: %w", err))
			}
		}
		if e.kernel != nil && e.parent == nil {
			// After the runs' cutters: their kernel faults go first.
			if err := e.kernel.Close(); err != nil {
				errs = append(errs, fmt.Errorf("engine: kernel network: %w", err))
			}
		}
		if e.keyDir != "" && e.parent == nil {
			if err := os.RemoveAll(e.keyDir); err != nil {
				errs = append(errs, err)
			}
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}
