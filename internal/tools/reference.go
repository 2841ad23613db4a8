package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sshrig/sshrig/internal/capbuf"
	"github.com/sshrig/sshrig/internal/jumpdial"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Deadlines are the reference client's per-phase limits. ssh.ClientConfig's
// Timeout bounds only the TCP connect, so the handshake gets a deadline on
// the connection, and a running session gets keepalives with a reply
// deadline: without them a blackholed connection hangs Dial, Run and Wait
// forever.
type Deadlines struct {
	Connect   time.Duration // TCP connect
	Handshake time.Duration // key exchange and authentication
	// Liveness is how long a keepalive may go unanswered once the
	// handshake is done (session open, exec, waiting for the exit status).
	Liveness time.Duration
	Total    time.Duration // the whole attempt
}

// DeadlinesFor derives phase deadlines from the attempt's budget.
func DeadlinesFor(budget time.Duration) Deadlines {
	if budget <= 0 {
		budget = 30 * time.Second
	}
	clamp := func(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }
	// The handshake gets two fifths of the budget: on a loaded machine (CI
	// running the race detector on two cores) a key exchange that takes 3 ms
	// idle has been seen to take over a second. Liveness is a seventh: a
	// dead transport is noticed within about 1.5 liveness periods.
	return Deadlines{
		Connect:   clamp(budget/5, 100*time.Millisecond, 10*time.Second),
		Handshake: clamp(budget*2/5, 100*time.Millisecond, 15*time.Second),
		Liveness:  clamp(budget/7, 100*time.Millisecond, 15*time.Second),
		Total:     budget,
	}
}

// Phase is where an attempt stopped.
type Phase string

const (
	PhaseSetup     Phase = "setup"     // reading the identity or known_hosts file
	PhaseConnect   Phase = "connect"   // TCP connect
	PhaseHandshake Phase = "handshake" // key exchange and authentication
	PhaseSession   Phase = "session"   // opening the session channel
	PhaseExec      Phase = "exec"      // sending the exec request
	PhaseWait      Phase = "wait"      // waiting for the exit status
	PhaseDone      Phase = "done"      // an exit status or signal arrived
)

// Attempt is what one try at the operation established, before any
// classification.
type Attempt struct {
	Phase Phase
	Err   error
	// RequestSent: the exec request may have reached the server; from here
	// on, only a received exit status can say what happened.
	RequestSent bool
	// ExitReceived: the server reported how the command ended.
	ExitReceived bool
	ExitCode     int
	ExitSignal   string
	// ContractErr is set when the command exited 0 but its answer breaks the
	// operation's contract (package operations).
	ContractErr error
	// Specific refusals, established from typed errors and connection state.
	HostKeyMismatch bool
	AuthRejected    bool
	RateLimited     bool
	ExecRefused     bool
	// LivenessLost: keepalives went unanswered; TotalExpired: the budget ran out.
	LivenessLost bool
	TotalExpired bool
	Stdout       []byte // the remote command's stdout
	Stderr       []byte
}

// Client is the reference SSH client (golang.org/x/crypto/ssh).
type Client struct {
	Deadlines Deadlines
	// NoDeadlines drops every deadline and keepalive (a defect).
	NoDeadlines bool
	// IgnoreHostKey accepts whatever host key the server presents, as
	// InsecureIgnoreHostKey or StrictHostKeyChecking=no do (a defect).
	IgnoreHostKey bool
	// MaxOutput bounds how much remote output is kept. Default 1 MiB.
	MaxOutput int
}

// Attempt tries t once.
func (c Client) Attempt(ctx context.Context, t tool.Target) Attempt {
	d := c.Deadlines
	if d.Total == 0 {
		d = DeadlinesFor(t.Deadline)
	}
	if !c.NoDeadlines {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Total)
		defer cancel()
	}
	a := Attempt{Phase: PhaseSetup}

	signer, err := loadSigner(t.Identity, t.Certificate)
	if err != nil {
		a.Err = err
		return a
	}
	hostKeys, err := knownhosts.New(t.KnownHosts)
	if err != nil {
		a.Err = fmt.Errorf("known_hosts: %w", err)
		return a
	}

	a.Phase = PhaseConnect
	dialer := net.Dialer{}
	if !c.NoDeadlines {
		dialer.Timeout = d.Connect
	}
	conn, err := c.dial(ctx, t, &dialer, d, signer, hostKeys)
	if err != nil {
		a.Err = err
		return a
	}
	// Whatever happens next, a cancelled context must end a blocked read.
	stopOnCancel := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopOnCancel()

	a.Phase = PhaseHandshake
	var authMu sync.Mutex
	authTried := false
	cfg := &gossh.ClientConfig{
		User: t.User,
		Auth: []gossh.AuthMethod{gossh.PublicKeysCallback(func() ([]gossh.Signer, error) {
			authMu.Lock()
			authTried = true
			authMu.Unlock()
			return []gossh.Signer{signer}, nil
		})},
		HostKeyCallback: hostKeys,
	}
	if c.IgnoreHostKey {
		cfg.HostKeyCallback = gossh.InsecureIgnoreHostKey() //nolint:gosec // the mutant's defect
	}
	if !c.NoDeadlines {
		conn.SetDeadline(time.Now().Add(d.Handshake))
	}
	sc, chans, reqs, err := gossh.NewClientConn(conn, t.Addr, cfg)
	if err != nil {
		conn.Close()
		a.Err = err
		var keyErr *knownhosts.KeyError
		a.HostKeyMismatch = errors.As(err, &keyErr)
		authMu.Lock()
		// A rejection is a protocol answer, not a transport failure.
		a.AuthRejected = authTried && !a.HostKeyMismatch && !isTransportError(err)
		authMu.Unlock()
		a.TotalExpired = ctx.Err() != nil
		return a
	}
	conn.SetDeadline(time.Time{})
	client := gossh.NewClient(sc, chans, reqs)
	defer client.Close()

	transportDone := make(chan struct{})
	go func() { client.Wait(); close(transportDone) }()
	watch := &watchdog{}
	if !c.NoDeadlines {
		stopWatch := watch.start(ctx, client, d.Liveness)
		defer stopWatch()
	}

	a.Phase = PhaseSession
	sess, err := client.NewSession()
	if err != nil {
		a.Err = err
		var oce *gossh.OpenChannelError
		if errors.As(err, &oce) {
			a.RateLimited = oce.Reason == gossh.ResourceShortage
		}
		watch.record(&a, ctx)
		return a
	}
	defer sess.Close()
	limit := c.MaxOutput
	if limit <= 0 {
		limit = 1 << 20
	}
	stdout, stderr := capbuf.New(limit), capbuf.New(limit)
	sess.Stdout, sess.Stderr = stdout, stderr

	a.Phase = PhaseExec
	a.RequestSent = true
	if err := sess.Start(t.Command); err != nil {
		a.Err = err
		// The server answered the request with a refusal while the
		// connection stayed up: it was received and not run.
		select {
		case <-transportDone:
		default:
			a.ExecRefused = !isTransportError(err)
		}
		watch.record(&a, ctx)
		return a
	}

	a.Phase = PhaseWait
	err = sess.Wait()
	a.Stdout, a.Stderr = stdout.Bytes(), stderr.Bytes()
	var exitErr *gossh.ExitError
	var missing *gossh.ExitMissingError
	switch {
	case err == nil:
		a.Phase, a.ExitReceived = PhaseDone, true
		_, a.ContractErr = operations.Check(t.Operation, a.Stdout)
	case errors.As(err, &exitErr):
		a.Phase, a.ExitReceived = PhaseDone, true
		a.ExitCode, a.ExitSignal = exitErr.ExitStatus(), exitErr.Signal()
	case errors.As(err, &missing):
		a.Err = err
	default:
		a.Err = err
	}
	watch.record(&a, ctx)
	return a
}

// isTransportError reports whether err is the connection failing rather
// than the peer answering.
func isTransportError(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}

// loadSigner reads the identity and, when there is one, its certificate.
func loadSigner(path, certPath string) (gossh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	s, err := gossh.ParsePrivateKey(b)
	if err != nil {
		// Never wrap the parse error's text into a message that might quote
		// the file: say only what failed.
		return nil, errors.New("identity: not a usable private key")
	}
	if certPath == "" {
		return s, nil
	}
	cb, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	pub, _, _, _, err := gossh.ParseAuthorizedKey(cb)
	if err != nil {
		return nil, fmt.Errorf("certificate: %v", err)
	}
	cert, ok := pub.(*gossh.Certificate)
	if !ok {
		return nil, errors.New("certificate: the file holds a plain key, not a certificate")
	}
	return gossh.NewCertSigner(cert, s)
}

// watchdog closes the client when keepalives go unanswered or the budget ends.
type watchdog struct {
	mu       sync.Mutex
	liveness bool
	expired  bool
}

func (w *watchdog) start(ctx context.Context, client *gossh.Client, liveness time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(liveness / 2)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				w.mu.Lock()
				w.expired = true
				w.mu.Unlock()
				client.Close()
				return
			case <-tick.C:
			}
			replied := make(chan struct{})
			go func() {
				client.SendRequest("keepalive@openssh.com", true, nil)
				close(replied)
			}()
			t := time.NewTimer(liveness)
			select {
			case <-replied:
				t.Stop()
				continue
			case <-t.C:
				w.mu.Lock()
				w.liveness = true
				w.mu.Unlock()
			case <-ctx.Done():
				t.Stop()
				w.mu.Lock()
				w.expired = true
				w.mu.Unlock()
			case <-done:
				t.Stop()
			}
			client.Close()
			<-replied
			return
		}
	}()
	return func() { close(done); <-finished }
}

func (w *watchdog) record(a *Attempt, ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a.LivenessLost = w.liveness
	a.TotalExpired = w.expired || ctx.Err() != nil
}

// Classify turns an attempt into the honest result: what the caller can know,
// and what it should do next.
func Classify(a Attempt) (result.Category, result.Retry, string) {
	switch {
	case a.ExitReceived && a.ExitSignal != "":
		return result.ConfirmedFailure, result.Never, "the remote command was killed by signal " + a.ExitSignal
	case a.ExitReceived && a.ExitCode == 0 && a.ContractErr != nil:
		// A parser that succeeded does not make an answer usable: nothing
		// may be built on a value the contract does not vouch for.
		return result.MalformedResponse, result.Never, "the remote command exited 0 but its answer is unusable: " + a.ContractErr.Error()
	case a.ExitReceived && a.ExitCode == 0:
		return result.Succeeded, result.Never, "the remote command exited 0"
	case a.ExitReceived:
		return result.ConfirmedFailure, result.Never, fmt.Sprintf("the remote command exited %d", a.ExitCode)
	case a.HostKeyMismatch:
		return result.LocalFailure, result.Never, "the server's host key does not match known_hosts; nothing was sent"
	case a.AuthRejected:
		return result.AuthenticationFailed, result.Never, "the server rejected the credential; nothing was run"
	case a.RateLimited:
		return result.RateLimited, result.AfterDelay, "the server refused the session for lack of resources; nothing was run"
	case a.ExecRefused:
		return result.AuthorizationDenied, result.Never, "the server refused to run the command; nothing was run"
	case a.RequestSent:
		why := "the connection ended"
		switch {
		case a.LivenessLost:
			why = "the server stopped answering keepalives"
		case a.TotalExpired:
			why = "the deadline passed"
		}
		return result.OutcomeUnknown, result.ReconcileFirst,
			why + " after the exec request was sent and before an exit status arrived; the command may have run: reconcile before retrying"
	case a.Phase == PhaseSetup:
		return result.LocalFailure, result.Never, "the tool could not prepare the connection (identity or known_hosts); nothing was sent"
	}
	why := "it failed"
	switch {
	case a.LivenessLost:
		why = "the server stopped answering keepalives"
	case a.TotalExpired:
		why = "the deadline passed"
	}
	return result.LocalFailure, result.Bounded, fmt.Sprintf("%s during %s, before the exec request was sent; nothing ran", why, a.Phase)
}

// Reference is the honest tool.
type Reference struct{ Client Client }

// Name implements tool.Tool.
func (Reference) Name() string { return "reference" }

// Run implements tool.Tool.
func (r Reference) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	if len(t.Hosts) > 0 {
		r.runFleet(ctx, t, stdout, stderr)
		return
	}
	start := time.Now()
	a := r.Client.Attempt(ctx, t)
	cat, retry, msg := Classify(a)
	if cat == result.OutcomeUnknown && t.Reconcile != "" && !r.Client.NoDeadlines {
		// Reconcile before anything else, within the budget; a tenth of it
		// stays free to report.
		answer, why := runReconcileProbe(ctx, t, start.Add(t.Deadline-t.Deadline/10), stderr)
		msg = reconciledMessage(msg, answer, why)
	}
	writeReport(stdout, stderr, t, a, resultFor(t, cat, retry, msg))
}

// resultFor is the result a tool reports for t: ok follows the category,
// and the operation and correlation id are echoed.
func resultFor(t tool.Target, cat result.Category, retry result.Retry, msg string) result.Result {
	return result.Result{OK: cat == result.Succeeded, Category: cat, Retry: retry,
		Operation: t.Operation, CorrelationID: t.CorrelationID, Message: msg}
}

// reportClassified reports the honest result of a.
func reportClassified(stdout, stderr io.Writer, t tool.Target, a Attempt) {
	cat, retry, msg := Classify(a)
	writeReport(stdout, stderr, t, a, resultFor(t, cat, retry, msg))
}

// writeReport writes the result on stdout and what happened on stderr.
func writeReport(stdout, stderr io.Writer, t tool.Target, a Attempt, r result.Result) {
	fmt.Fprintf(stderr, "phase=%s request_sent=%t exit_received=%t", a.Phase, a.RequestSent, a.ExitReceived)
	if a.Err != nil {
		fmt.Fprintf(stderr, " error=%q", a.Err.Error())
	}
	fmt.Fprintln(stderr)
	b, err := r.Marshal()
	if err != nil {
		fmt.Fprintf(stderr, "cannot encode result: %v\n", err)
		return
	}
	stdout.Write(append(b, '\n'))
}

// dial connects to the target: directly, or through t's jump host (an SSH
// connection to it with the same key and known_hosts, and a tunnel to
// t.Addr), the jump host's handshake bounded as the target's. Nothing the
// tool asks the target for has left before it returns, so a failure here
// is a failure to connect, whichever hop it was on.
func (c Client) dial(ctx context.Context, t tool.Target, dialer *net.Dialer, d Deadlines, signer gossh.Signer, hostKeys gossh.HostKeyCallback) (net.Conn, error) {
	if t.Jump == "" {
		return t.Dial(ctx, dialer)
	}
	first, err := t.DialJump(ctx, dialer)
	if err != nil {
		return nil, fmt.Errorf("jump host %s: %w", t.JumpAddr(), err)
	}
	if !c.NoDeadlines {
		first.SetDeadline(time.Now().Add(d.Handshake))
	}
	cfg := &gossh.ClientConfig{User: t.JumpUser(), Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)}, HostKeyCallback: hostKeys}
	if c.IgnoreHostKey {
		cfg.HostKeyCallback = gossh.InsecureIgnoreHostKey() //nolint:gosec // the mutant's defect
	}
	tunnel, err := jumpdial.Through(ctx, first, t.JumpAddr(), cfg, t.Addr)
	if err != nil {
		return nil, fmt.Errorf("through jump host %s: %w", t.JumpAddr(), err)
	}
	first.SetDeadline(time.Time{})
	return tunnel, nil
}

// runFleet attempts t on every host of its fleet at once and reports each
// host as its own attempt let it know (result.HostResult). The whole is
// summed up at the top: succeeded when every host succeeded, unknown when
// any host's outcome is, else the first host's failure.
func (r Reference) runFleet(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	attempts := make([]Attempt, len(t.Hosts))
	var wg sync.WaitGroup
	for i, host := range t.Hosts {
		ht := t
		ht.Addr, ht.Hosts = host, nil
		wg.Go(func() { attempts[i] = r.Client.Attempt(ctx, ht) })
	}
	wg.Wait()
	top := resultFor(t, result.Succeeded, result.Never, "every host ran the command and exited 0")
	failed := -1 // the host whose failure sums the whole up
	for i, a := range attempts {
		cat, retry, msg := Classify(a)
		top.Hosts = append(top.Hosts, result.HostResult{Host: t.Hosts[i], OK: cat == result.Succeeded, Category: cat, Retry: retry, Message: msg})
		fmt.Fprintf(stderr, "host %s: phase=%s request_sent=%t exit_received=%t\n", t.Hosts[i], a.Phase, a.RequestSent, a.ExitReceived)
		switch {
		case cat == result.Succeeded:
		case failed < 0, cat == result.OutcomeUnknown && top.Hosts[failed].Category != result.OutcomeUnknown:
			failed = i
		}
	}
	if failed >= 0 {
		f := top.Hosts[failed]
		top.OK, top.Category, top.Retry = false, f.Category, f.Retry
		top.Message = "not every host succeeded (see hosts); retry only the hosts whose entry allows it, never the batch"
	}
	b, err := top.Marshal()
	if err != nil {
		fmt.Fprintf(stderr, "cannot encode result: %v\n", err)
		return
	}
	stdout.Write(append(b, '\n'))
}
