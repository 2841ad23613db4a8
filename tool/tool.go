package tool

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The environment variables an external tool reads its Target from
// (docs/tool-contract.md); Environ writes them and FromEnv reads them.
const (
	EnvAddr          = "SSHRIG_ADDR"
	EnvHost          = "SSHRIG_HOST"
	EnvPort          = "SSHRIG_PORT"
	EnvUser          = "SSHRIG_USER"
	EnvIdentity      = "SSHRIG_IDENTITY"
	EnvCertificate   = "SSHRIG_CERTIFICATE"
	EnvKnownHosts    = "SSHRIG_KNOWN_HOSTS"
	EnvCorrelationID = "SSHRIG_CORRELATION_ID"
	EnvOperation     = "SSHRIG_OPERATION"
	EnvCommand       = "SSHRIG_COMMAND"
	EnvDeadlineMS    = "SSHRIG_DEADLINE_MS"
	EnvLookup        = "SSHRIG_LOOKUP_COMMAND"
	EnvFollowUp      = "SSHRIG_FOLLOWUP_COMMAND"
	EnvReconcile     = "SSHRIG_RECONCILE_COMMAND"
	// EnvLedger is the ledger's path on the target, set for reconcile
	// probes (docs/reconcile.md).
	EnvLedger = "SSHRIG_LEDGER"
	// EnvJump is the jump host the tool must reach the target through, in
	// `ssh -J` form (user@host:port), or empty (Target.Jump).
	EnvJump = "SSHRIG_JUMP"
	// EnvHosts is, for an operation on a fleet, every host's host:port,
	// separated by spaces, or empty (Target.Hosts).
	EnvHosts = "SSHRIG_HOSTS"
)

// Target is everything a tool needs for one attempt at one operation.
type Target struct {
	// Addr is "host:port" of the SSH server as the tool must dial it.
	Addr string
	// User is the SSH user name.
	User string
	// Identity is the path of the private key file (OpenSSH format,
	// unencrypted). It is a secret: a tool must never print it or its path.
	Identity string
	// Certificate is the path of an OpenSSH user certificate for Identity
	// ("" when there is none). OpenSSH's ssh also finds it on its own, as
	// Identity + "-cert.pub".
	Certificate string
	// KnownHosts is a known_hosts file that pins the server's host key for
	// Addr. A tool must verify the host key against it.
	KnownHosts string
	// CorrelationID ties the attempt to the remote markers and the rig's
	// event log; the tool must echo it in its result.
	CorrelationID string
	// Operation is the name of what is attempted (e.g. "restart_service");
	// the tool echoes it in its result.
	Operation string
	// Command is the remote command, already wrapped with its markers.
	Command string
	// Deadline is the budget for the whole attempt. A tool that has not
	// returned when it is spent (plus a grace the rig adds) hangs.
	Deadline time.Duration
	// Seed is the case run's seed in a repeated run (0 otherwise): a tool
	// whose behaviour is drawn at random draws from it, so replaying the
	// case run with the same seed draws the same.
	Seed uint64

	// Lookup and FollowUp are set for a step-sequence case (a small task:
	// create a record, then attach a note to it). Lookup reads the record
	// by correlation id (a probe: it changes nothing); FollowUp attaches the
	// note, with {id} standing for the record's id. An agent-like tool that
	// could not tell whether Command ran looks before it acts again.
	Lookup   string
	FollowUp string

	// Reconcile is set where the case names its operation's reconcile
	// probe: a command to run on the target, over a fresh session, that
	// prints one answer {"state": "...", "evidence": "..."} about this
	// correlation id (docs/reconcile.md). It changes nothing. A tool whose
	// attempt ended with outcome_unknown runs it before anything else.
	Reconcile string

	// Approval, for an agent under test (sshrig agent), is how the person
	// the rig plays answers the agent's requests for approval, one of
	// ApprovalModes (internal/agentrun); ApprovalNone when no call needs
	// one.
	Approval string

	// Jump, when set, is the jump host (a bastion) the tool must reach Addr
	// through, in `ssh -J` form: "user@host:port". Addr then names the
	// target as the jump host reaches it: the tool asks the jump host for a
	// tunnel (direct-tcpip) to Addr and runs the target's SSH exchange
	// inside it. The jump host's key is pinned in KnownHosts too, and the
	// same Identity logs in to both.
	Jump string

	// Hosts, when set, is a fleet: the operation runs on every one of these
	// hosts ("host:port", as Addr), the same Command on each (its markers
	// take each host's id there), and the tool reports what it knows of
	// each host in its result's hosts (result.HostResult), naming a host
	// exactly as it appears here. Addr is then the first of them, and
	// KnownHosts pins the key at every one.
	Hosts []string

	// Network is where the tool's connections must start; nil means this
	// process's own network. Under the kernel network (--net kernel) Addr
	// is reachable only from a network namespace of the rig's: an
	// in-process tool dials with Dial, and an external tool is started
	// with Start, so its process lives there.
	Network Network
}

// The approval modes of an agent case (Target.Approval): how the person the
// rig plays answers an agent's approve call.
const (
	ApprovalNone    = ""
	ApprovalApprove = "approve"
	ApprovalDeny    = "deny"
	ApprovalSilent  = "silent"
	// ApprovalFreshProcess approves, and runs the task in two agent
	// processes: an approval the first got is no approval for the second.
	ApprovalFreshProcess = "fresh-process"
)

// ApprovalModes are the approval modes a matrix case may name.
func ApprovalModes() []string {
	return []string{ApprovalApprove, ApprovalDeny, ApprovalSilent, ApprovalFreshProcess}
}

// Network is a network a tool's connections start in.
type Network interface {
	// Do runs fn on an OS thread inside the network: the sockets fn
	// creates, and the processes it starts, live there.
	Do(fn func() error) error
}

// Networker is a Tool that starts processes of its own outside any one
// case's Target (a server the run shares): before the preflight the rig
// tells it the Network they must start in (nil: this process's own). An
// error means the tool cannot run there, and the run stops with it.
type Networker interface {
	UseNetwork(Network) error
}

// Dial connects to Addr with d from the tool's Network, as a tool must:
// under the kernel network a plain dial from this process would not reach
// the server.
func (t Target) Dial(ctx context.Context, d *net.Dialer) (net.Conn, error) {
	return t.dial(ctx, d, t.Addr)
}

// DialJump connects to the jump host (JumpAddr) as Dial connects to Addr:
// the first hop of a tool that reaches Addr through it.
func (t Target) DialJump(ctx context.Context, d *net.Dialer) (net.Conn, error) {
	return t.dial(ctx, d, t.JumpAddr())
}

func (t Target) dial(ctx context.Context, d *net.Dialer, addr string) (net.Conn, error) {
	var c net.Conn
	err := Within(t.Network, func() error {
		var err error
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// Start runs start (for example an exec.Cmd's Start) inside the tool's
// Network, so the process it starts connects from there.
func (t Target) Start(start func() error) error { return Within(t.Network, start) }

// Within runs fn inside n, or right here when n is nil.
func Within(n Network, fn func() error) error {
	if n == nil {
		return fn()
	}
	return n.Do(fn)
}

// Host and Port split Addr.
func (t Target) Host() string {
	h, _, _ := net.SplitHostPort(t.Addr)
	return h
}

// Port is the port part of Addr.
func (t Target) Port() int {
	_, p, _ := net.SplitHostPort(t.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Environ is the Target as the SSHRIG_* environment variables an external
// tool reads (docs/tool-contract.md).
func (t Target) Environ() []string {
	return []string{
		EnvAddr + "=" + t.Addr,
		EnvHost + "=" + t.Host(),
		EnvPort + "=" + strconv.Itoa(t.Port()),
		EnvUser + "=" + t.User,
		EnvIdentity + "=" + t.Identity,
		EnvCertificate + "=" + t.Certificate,
		EnvKnownHosts + "=" + t.KnownHosts,
		EnvCorrelationID + "=" + t.CorrelationID,
		EnvOperation + "=" + t.Operation,
		EnvCommand + "=" + t.Command,
		EnvDeadlineMS + "=" + strconv.FormatInt(t.Deadline.Milliseconds(), 10),
		EnvLookup + "=" + t.Lookup,
		EnvFollowUp + "=" + t.FollowUp,
		EnvReconcile + "=" + t.Reconcile,
		EnvJump + "=" + t.Jump,
		EnvHosts + "=" + strings.Join(t.Hosts, " "),
	}
}

// JumpAddr is the host:port part of Jump ("" without a jump host).
func (t Target) JumpAddr() string {
	_, hp, _ := strings.Cut(t.Jump, "@")
	return hp
}

// JumpUser is the user part of Jump ("" without a jump host).
func (t Target) JumpUser() string {
	u, _, _ := strings.Cut(t.Jump, "@")
	if !strings.Contains(t.Jump, "@") {
		return ""
	}
	return u
}

// Tool tries one operation against a Target.
//
// Run prints exactly one result object (package result) on stdout and may
// log to stderr. It should return within t.Deadline; ctx is cancelled when
// the rig gives up on it. A tool that retries does so inside Run: the rig
// sees every attempt on the server.
type Tool interface {
	Name() string
	Run(ctx context.Context, t Target, stdout, stderr io.Writer)
}

// FromEnv reads a Target from the SSHRIG_* variables (the inverse of
// Environ), for tools the rig runs as external programs. getenv is usually
// os.Getenv. Every variable but SSHRIG_CERTIFICATE, SSHRIG_LOOKUP_COMMAND,
// SSHRIG_FOLLOWUP_COMMAND and SSHRIG_RECONCILE_COMMAND is required; the
// error names the missing or bad ones.
func FromEnv(getenv func(string) string) (Target, error) {
	var missing []string
	get := func(name string) string {
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	}
	t := Target{
		Addr:          get(EnvAddr),
		User:          get(EnvUser),
		Identity:      get(EnvIdentity),
		KnownHosts:    get(EnvKnownHosts),
		CorrelationID: get(EnvCorrelationID),
		Operation:     get(EnvOperation),
		Command:       get(EnvCommand),
	}
	// Optional: set only where they apply.
	t.Certificate = getenv(EnvCertificate)
	t.Lookup = getenv(EnvLookup)
	t.FollowUp = getenv(EnvFollowUp)
	t.Reconcile = getenv(EnvReconcile)
	t.Jump = getenv(EnvJump)
	t.Hosts = strings.Fields(getenv(EnvHosts))
	ms := get(EnvDeadlineMS)
	n, err := strconv.ParseInt(ms, 10, 64)
	if ms != "" && err == nil && n > 0 {
		t.Deadline = time.Duration(n) * time.Millisecond
	}
	if len(missing) > 0 {
		// t holds what was there, for a caller that fills the rest.
		return t, fmt.Errorf("tool: missing %s", strings.Join(missing, ", "))
	}
	if t.Deadline == 0 {
		return t, fmt.Errorf("tool: "+EnvDeadlineMS+"=%q is not a positive number of milliseconds", ms)
	}
	if _, _, err := net.SplitHostPort(t.Addr); err != nil {
		return t, fmt.Errorf("tool: "+EnvAddr+"=%q: %v", t.Addr, err)
	}
	if t.Jump != "" {
		if _, _, err := net.SplitHostPort(t.JumpAddr()); err != nil || t.JumpUser() == "" {
			return t, fmt.Errorf("tool: "+EnvJump+"=%q: want user@host:port", t.Jump)
		}
	}
	for _, h := range t.Hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return t, fmt.Errorf("tool: "+EnvHosts+": %q: %v", h, err)
		}
	}
	return t, nil
}

// Process is implemented by tools that run as a separate program, so that the
// rig can record how the program ended and what it left behind.
type Process interface {
	Tool
	// RunProcess runs the program once; started, when not nil, is called
	// with the program's pid as soon as it runs.
	RunProcess(ctx context.Context, t Target, stdout, stderr io.Writer, started func(pid int)) ProcessExit
}

// ProcessExit is how a tool's program ended.
type ProcessExit struct {
	PID      int    `json:"pid"`
	ExitCode int    `json:"exit_code"`        // -1 when killed by a signal or never started
	Signal   string `json:"signal,omitempty"` // set when a signal ended it
	// Killed: the rig killed its process group because ctx ended (a hang).
	Killed bool `json:"killed,omitempty"`
	// LeftRunning lists processes of the tool's process group still alive
	// after the program exited, or holding its output open; the rig killed them.
	LeftRunning []int `json:"left_running,omitempty"`
	// StartErr is set when the program could not be started.
	StartErr string `json:"start_error,omitempty"`
}
