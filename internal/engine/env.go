package engine

import (
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
	opts     Options
	ep       *Endpoint
	ctl      *control.Client
	ready    control.Ready
	hostKey  gossh.PublicKey
	keyDir   string // private: identity file and known_hosts files
	identity string // the tools' private key file
	toolKey  gossh.Signer
	ca       gossh.Signer // signs case certificates
	probeID  string
	probe    *gossh.Client // set by Start, read-only after
	// follower reads the ledger's new lines over the probe connection for
	// each truth; nil where the target's shell could not start it, and
	// then every reading opens a session of its own.
	follower *reconcile.Follower
	nextID   atomic.Uint64
	// sharedHost: cases begun from now on share one host (ShareOneHost).
	sharedHost atomic.Bool
	runTag     string
	// kernel is the kernel network under NetKernel, nil under NetProxy.
	kernel  *kernelnet.Net
	runsMu  sync.Mutex
	runs    map[string]*Run // begun and not yet finished, by case id
	tap     *control.Subscription
	tapDone chan struct{}
	// dispatched counts the events dispatch has taken from tap and handed
	// to their runs; dispatchedCh is closed (and replaced) at every one,
	// under dispatchMu.
	dispatchMu   sync.Mutex
	dispatched   uint64
	dispatchedCh chan struct{}
	closeErr     error
	closed       sync.Once
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
	e := &Env{opts: opts, runTag: randomHex(4), runs: map[string]*Run{}, dispatchedCh: make(chan struct{})}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	token := make([]byte, 32)
	rand.Read(token)
	if e.keyDir, err = os.MkdirTemp("", "sshrig-keys-"); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if opts.Net == NetKernel {
		if e.kernel, err = kernelnet.New(ctx); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	if e.ep, err = opts.Launcher.Launch(ctx, token); err != nil {
		return nil, err
	}
	if e.ctl, err = control.Dial(ctx, e.ep.ControlAddr, token); err != nil {
		return nil, err
	}
	e.ready = e.ctl.Ready()
	e.tap = e.ctl.Tap()
	e.tapDone = make(chan struct{})
	go e.dispatch()
	if e.hostKey, _, _, _, err = gossh.ParseAuthorizedKey([]byte(e.ready.HostKey)); err != nil {
		return nil, fmt.Errorf("engine: server host key: %w", err)
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
	_, probeSigner, err := newKey()
	if err != nil {
		return nil, err
	}
	if _, e.ca, err = newKey(); err != nil {
		return nil, err
	}
	keys := []string{
		string(gossh.MarshalAuthorizedKey(toolSigner.PublicKey())),
		string(gossh.MarshalAuthorizedKey(probeSigner.PublicKey())),
	}
	if err := e.ctl.Do(ctx, control.Request{Op: control.OpAuthorize, User: opts.User, Keys: keys}); err != nil {
		return nil, err
	}

	// The probe has a case of its own, so its sessions are never mistaken
	// for a tool's, and it reaches the server directly, not through a cutter.
	e.probeID = "rig-probe-" + e.runTag
	if err := e.ctl.Do(ctx, control.Request{Op: control.OpSetupCase, Case: e.probeID, Probe: true}); err != nil {
		return nil, err
	}
	if e.probe, err = e.dialDirect(ctx, e.probeID, probeSigner); err != nil {
		return nil, fmt.Errorf("engine: probe connection: %w", err)
	}
	if f, err := reconcile.Follow(ctx, e.probe, e.ready.Ledger); err == nil {
		e.follower = f
	}
	return e, nil
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

// dialDirect opens an SSH connection straight to the server for caseID.
func (e *Env) dialDirect(ctx context.Context, caseID string, signer gossh.Signer) (*gossh.Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.ep.SSHAddr)
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
	c, chans, reqs, err := gossh.NewClientConn(conn, e.ep.SSHAddr, &gossh.ClientConfig{
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

// dispatch hands every event to the run of its case, in server order. One
// goroutine for all runs: a run has no goroutine of its own until it cuts.
func (e *Env) dispatch() {
	defer close(e.tapDone)
	for {
		ev, err := e.tap.Next(context.Background())
		if err != nil {
			return
		}
		e.runsMu.Lock()
		r := e.runs[ev.Case]
		e.runsMu.Unlock()
		if r != nil {
			evp := new(control.Event)
			*evp = ev
			r.handle(evp)
		}
		e.dispatchMu.Lock()
		e.dispatched++
		close(e.dispatchedCh)
		e.dispatchedCh = make(chan struct{})
		e.dispatchMu.Unlock()
	}
}

// caughtUp waits until dispatch has handed on every event its tap had been
// given when it was called: after a control request's reply, every event the
// server emitted before it has reached its run.
func (e *Env) caughtUp(ctx context.Context) error {
	want := e.tap.Pushed()
	for {
		e.dispatchMu.Lock()
		done, ch := e.dispatched >= want, e.dispatchedCh
		e.dispatchMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-e.tapDone:
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
func (e *Env) Control() *control.Client { return e.ctl }

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
		e.runsMu.Lock()
		open := make([]*Run, 0, len(e.runs))
		for _, r := range e.runs {
			open = append(open, r)
		}
		e.runsMu.Unlock()
		for _, r := range open {
			r.closeLocal()
		}
		if e.follower != nil {
			e.follower.Close()
		}
		if e.probe != nil {
			e.probe.Close()
		}
		if e.tap != nil {
			e.tap.Close()
			<-e.tapDone
		}
		if e.ctl != nil {
			e.ctl.Close()
		}
		if e.ep != nil && e.ep.Stop != nil {
			if err := e.ep.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("engine: stop server: %w", err))
			}
		}
		if e.kernel != nil {
			// After the runs' cutters: their kernel faults go first.
			if err := e.kernel.Close(); err != nil {
				errs = append(errs, fmt.Errorf("engine: kernel network: %w", err))
			}
		}
		if e.keyDir != "" {
			if err := os.RemoveAll(e.keyDir); err != nil {
				errs = append(errs, err)
			}
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}
