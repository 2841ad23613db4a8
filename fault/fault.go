package fault

import (
	"fmt"
	"strings"
	"time"
)

// Knowledge is what a caller can know about the remote effect of its request
// when the transport dies at a moment.
type Knowledge int

const (
	// NothingSent: no request that could have an effect left the caller.
	NothingSent Knowledge = iota + 1
	// RequestSent: the request may have reached the remote side; no result arrived.
	RequestSent
	// ResultReceived: the remote result (exit status) reached the caller.
	ResultReceived
)

func (k Knowledge) String() string {
	switch k {
	case NothingSent:
		return "nothing was sent"
	case RequestSent:
		return "request sent, no result"
	case ResultReceived:
		return "result received"
	}
	return fmt.Sprintf("Knowledge(%d)", int(k))
}

// Moment is a named point of the SSH exchange where a cut lands.
type Moment int

// The moments, in the order an exchange passes through them.
const (
	Refuse      Moment = iota + 1 // nothing accepts the TCP connection
	Accept                        // after TCP accept, before the SSH version exchange
	Handshake                     // during key exchange
	Auth                          // after authentication, before any channel opens
	Channel                       // session channel requested, not yet confirmed
	PrepStep                      // a request of the tool's conversation before the workload's: received, not yet answered
	Exec                          // exec request received, command not yet started
	Started                       // start marker written, command running
	Output                        // after N bytes of the command's stdout reached the client
	Finished                      // command exited, complete marker written, exit status not sent
	ExitStatus                    // exit status delivered, channel not closed
	CleanupStep                   // a request after the workload's exit status was delivered: received, not yet answered
	None                          // no cut (baseline)
)

type momentDef struct {
	name      string
	where     string
	knowledge Knowledge
}

var moments = [...]momentDef{
	Refuse:      {"refuse", "nothing accepts the TCP connection", NothingSent},
	Accept:      {"accept", "after TCP accept, before the SSH version exchange", NothingSent},
	Handshake:   {"handshake", "during key exchange", NothingSent},
	Auth:        {"auth", "after authentication, before any channel opens", NothingSent},
	Channel:     {"channel", "session channel requested, not yet confirmed", NothingSent},
	PrepStep:    {"prep-step", "a request of the tool's conversation before the workload's: received, not yet answered", NothingSent},
	Exec:        {"exec", "exec request received, command not yet started", RequestSent},
	Started:     {"started", "start marker written, command running", RequestSent},
	Output:      {"output", "after N bytes of the command's stdout reached the client", RequestSent},
	Finished:    {"finished", "command exited, complete marker written, exit status not sent", RequestSent},
	ExitStatus:  {"exit-status", "exit status delivered, channel not closed", ResultReceived},
	CleanupStep: {"cleanup-step", "a request after the workload's exit status was delivered: received, not yet answered", ResultReceived},
	None:        {"none", "no cut (baseline)", ResultReceived},
}

// Moments returns every moment in exchange order.
func Moments() []Moment {
	out := make([]Moment, 0, len(moments)-1)
	for m := Refuse; m <= None; m++ {
		out = append(out, m)
	}
	return out
}

func (m Moment) valid() bool { return m >= Refuse && m <= None }

func (m Moment) String() string {
	if !m.valid() {
		return fmt.Sprintf("Moment(%d)", int(m))
	}
	return moments[m].name
}

// Where describes where on the exchange the cut lands.
func (m Moment) Where() string {
	if !m.valid() {
		return ""
	}
	return moments[m].where
}

// Knowledge is what the caller can know when the transport dies at m.
func (m Moment) Knowledge() Knowledge {
	if !m.valid() {
		return 0
	}
	return moments[m].knowledge
}

// KnowledgeAt is what the caller can know when the transport dies at m by cut
// c. A helper process killed after the exit status reached it never relayed
// that status: its caller knows only that the request was sent.
func KnowledgeAt(m Moment, c Cut) Knowledge {
	if c.HelperCut() && m == ExitStatus {
		return RequestSent
	}
	return m.Knowledge()
}

// IsStep reports whether m is a step of a tool's conversation rather than a
// point of the workload's own exchange: step cases come from the
// conversation a preflight learned (see [Step]), not from a matrix.
func (m Moment) IsStep() bool { return m == PrepStep || m == CleanupStep }

// HasCut reports whether a case at m cuts anything: every moment but refuse
// (nothing accepts the connection) and none (the baseline).
func (m Moment) HasCut() bool { return m.valid() && m != Refuse && m != None }

// InCommandWindow reports whether m lies between the exec request's arrival
// and the exit status's delivery (exec to exit-status): the moments at which
// the server can hold the command's answer, and a reconcile probe has an
// outcome to look for.
func (m Moment) InCommandWindow() bool { return m >= Exec && m <= ExitStatus }

// Step names the request of a tool's conversation where a step case cuts:
// the server holds after it received the request and before it answers,
// and the case's cut lands there. The moment says where the step lies:
// [PrepStep] before the workload's request left (nothing of the workload
// was sent), [CleanupStep] after the workload's exit status was delivered.
type Step struct {
	// Request is the request's name as the server's conversation records
	// it: "session", "pty-req", "env", "exec", "subsystem", "sftp-open",
	// "sftp-write", "sftp-close", ...
	Request string `json:"request"`
	// Occurrence is the request's place among the case's requests of that
	// name, from 1.
	Occurrence int `json:"occurrence,omitempty"`
	// UploadBytes, when > 0, cuts an upload instead: once this many bytes
	// of the file arrived (over SFTP writes or on the stdin of `scp -t`),
	// the server keeps them, drops the rest and holds.
	UploadBytes int64 `json:"upload_bytes,omitempty"`
}

// ConnectionRequest is the request a connection's arrival is in the
// conversation. A step naming it (with an occurrence from 2: a later
// connection, such as the one that carries a workload uploaded over the
// first) holds at that connection's Handshake or Auth moment.
const ConnectionRequest = "connection"

// Fits reports whether the step can hold at moment m: a connection step
// at the handshake or authentication of its connection, any other step at
// prep-step or cleanup-step.
func (s Step) Fits(m Moment) bool {
	if s.Request == ConnectionRequest && s.UploadBytes == 0 {
		return m == Handshake || m == Auth
	}
	return m.IsStep()
}

// Validate checks the step's values.
func (s Step) Validate() error {
	switch {
	case s.UploadBytes < 0:
		return fmt.Errorf("fault: step upload_bytes %d is negative", s.UploadBytes)
	case s.UploadBytes == 0 && (s.Request == "" || s.Occurrence < 1):
		return fmt.Errorf("fault: a step needs a request name and an occurrence from 1, not %q #%d", s.Request, s.Occurrence)
	}
	return nil
}

func (s Step) String() string {
	if s.UploadBytes > 0 {
		return fmt.Sprintf("upload after %d bytes", s.UploadBytes)
	}
	return fmt.Sprintf("%s #%d", s.Request, s.Occurrence)
}

// DefaultOutputBytes is N for the output moment when a case gives none: the
// cut lands after the first N bytes of the command's stdout reached the client.
const DefaultOutputBytes = 8

// RunsCommand reports whether the server can start the command after a cut at m,
// which is when the disposition decides the remote truth.
func (m Moment) RunsCommand() bool { return m >= Exec }

// MarshalText implements encoding.TextMarshaler.
func (m Moment) MarshalText() ([]byte, error) {
	if !m.valid() {
		return nil, fmt.Errorf("fault: invalid moment %d", int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Moment) UnmarshalText(b []byte) error {
	v, err := ParseMoment(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseMoment parses a moment name such as "started" or "exit-status".
func ParseMoment(s string) (Moment, error) {
	for m := Refuse; m <= None; m++ {
		if moments[m].name == s {
			return m, nil
		}
	}
	return 0, &UnknownValueError{Kind: "moment", Value: s, Valid: names(Moments())}
}

// Cut is how the tool's local transport dies.
type Cut int

const (
	Reset      Cut = iota + 1 // TCP RST in both directions
	Close                     // FIN in both directions, never RST
	Blackhole                 // bytes stop flowing; sockets stay open until the case ends
	KillHelper                // SIGKILL to the local process that owns the client socket
	// Stall cuts nothing: the server holds the command's answer until the
	// tool has given up (its deadline passed) while the connection stays up
	// and answers keepalives (seed 003's C05).
	Stall
	// Vanish removes the far end's state of the connection without a
	// packet, as when the server's host rebooted: the tool hears nothing
	// until it sends, and its next segment meets an RST. Only the kernel
	// can drop the far end's own RST, so it needs the kernel network
	// (--net kernel); the server sees its transport end, as after a reset.
	Vanish

	// The server-side faults: the far side breaks the exchange, not the
	// tool's transport (ServerSide).

	// ServerCrash: the server process serving the case dies, as an sshd
	// child killed mid-session. Every connection of the case ends with an
	// RST from the server, every session without an exit status; a command
	// not yet started never starts, a running one meets the disposition.
	ServerCrash
	// Reboot: the case's host goes down and comes back. Every process of
	// the host is killed whatever the disposition, its connections vanish
	// (the tool hears nothing; after the host is back, its next segment
	// meets an RST), new connections wait while it is down, and after the
	// pause (DefaultRebootPause, or the case's) the host answers again with
	// its files and its ledger but none of its processes.
	Reboot
	// NoExitStatus: at finished, the command's channel closes (EOF, then
	// close) without an exit status, the transport up: the caller got no
	// result.
	NoExitStatus
	// EOFOnly: at finished, the channel sends EOF and then nothing, neither
	// a status nor a close, the transport up and answering keepalives: only
	// the tool's own deadline ends the wait.
	EOFOnly

	// The helper's lifecycle: what becomes of the local process that owns
	// the tool's socket (an OpenSSH ControlMaster the tool reuses), beside
	// KillHelper's SIGKILL (HelperCut).

	// WedgeHelper stops the helper (SIGSTOP), as a master wedged after a
	// laptop's sleep: it holds its socket and answers nothing, neither the
	// server nor its clients; the rig kills it when the case ends.
	WedgeHelper
	// ExpireHelper ends the helper as its ControlPersist running out does:
	// it exits on its own terms (SIGTERM), closing its connection and its
	// control socket, while a client is asking it for a session.
	ExpireHelper
)

var cutNames = [...]string{Reset: "reset", Close: "close", Blackhole: "blackhole", KillHelper: "kill-helper", Stall: "stall", Vanish: "vanish",
	ServerCrash: "server-crash", Reboot: "reboot", NoExitStatus: "no-exit-status", EOFOnly: "eof-only",
	WedgeHelper: "wedge-helper", ExpireHelper: "expire-helper"}

// Cuts returns every cut kind.
func Cuts() []Cut {
	return []Cut{Reset, Close, Blackhole, KillHelper, Stall, Vanish, ServerCrash, Reboot, NoExitStatus, EOFOnly, WedgeHelper, ExpireHelper}
}

// HelperCuts returns the cuts made on the helper process that owns the
// tool's socket: killed, wedged, expired.
func HelperCuts() []Cut { return []Cut{KillHelper, WedgeHelper, ExpireHelper} }

// HelperCut reports whether c is made on the helper process that owns the
// tool's socket rather than on the socket or the server.
func (c Cut) HelperCut() bool { return c == KillHelper || c == WedgeHelper || c == ExpireHelper }

// ServerCuts returns the faults the far side makes (ServerSide).
func ServerCuts() []Cut { return []Cut{ServerCrash, Reboot, NoExitStatus, EOFOnly} }

// ServerSide reports whether c is made by the server (or its host) rather
// than on the tool's transport: the server performs it at the held moment.
func (c Cut) ServerSide() bool { return c >= ServerCrash && c <= EOFOnly }

// FitsMoment reports whether cut c can be made at moment m. A stall holds
// an answer in the command's window; the exit-status anomalies replace the
// status at finished; a reboot needs a host with something to lose, from
// the exec request on; a server crash can come at any moment with a
// connection; every transport cut at any moment that cuts.
func (c Cut) FitsMoment(m Moment) bool {
	switch c {
	case Stall, Reboot:
		return m.InCommandWindow()
	case NoExitStatus, EOFOnly:
		return m == Finished
	}
	return m.HasCut()
}

// DefaultRebootPause is how long a rebooted host stays down when a case
// gives no pause: long enough that a tool reconnecting at once meets a
// host that is not back, short enough for a tool's budget to see it back.
const DefaultRebootPause = 2 * time.Second

// KernelCuts returns the cut kinds the kernel network installs in the
// kernel (--net kernel): there blackhole drops packets, reset is answered
// by the kernel, and vanish exists only there.
func KernelCuts() []Cut { return []Cut{Reset, Blackhole, Vanish} }

// SilentToTool reports whether the tool hears nothing when the cut
// happens: a blackhole never tells it, after a vanish or a reboot only its
// own next segment meets an RST, a channel that sent EOF only says nothing
// more, and a wedged helper answers nothing.
func (c Cut) SilentToTool() bool {
	return c == Blackhole || c == Vanish || c == Reboot || c == EOFOnly || c == WedgeHelper
}

// NeedsKernel reports whether c can only be made by the kernel network.
func (c Cut) NeedsKernel() bool { return c == Vanish }

// ConnectionCuts returns the cut kinds that end or silence the tool's
// connection: every kind but Stall. The default matrix crosses them with
// every moment.
func ConnectionCuts() []Cut { return []Cut{Reset, Close, Blackhole, KillHelper} }

// TransportCuts returns the cut kinds the cutter performs on the socket itself.
func TransportCuts() []Cut { return []Cut{Reset, Close, Blackhole} }

func (c Cut) valid() bool { return c >= Reset && c <= ExpireHelper }

func (c Cut) String() string {
	if !c.valid() {
		return fmt.Sprintf("Cut(%d)", int(c))
	}
	return cutNames[c]
}

// DropsTransport reports whether the server side sees its transport end when
// the cut happens (as opposed to a silent blackhole).
func (c Cut) DropsTransport() bool {
	return c == Reset || c == Close || c == KillHelper || c == ExpireHelper || c == Vanish || c == ServerCrash || c == Reboot
}

// MarshalText implements encoding.TextMarshaler.
func (c Cut) MarshalText() ([]byte, error) {
	if !c.valid() {
		return nil, fmt.Errorf("fault: invalid cut %d", int(c))
	}
	return []byte(c.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Cut) UnmarshalText(b []byte) error {
	v, err := ParseCut(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// ParseCut parses a cut kind name such as "reset".
func ParseCut(s string) (Cut, error) {
	for c := Reset; c <= ExpireHelper; c++ {
		if cutNames[c] == s {
			return c, nil
		}
	}
	return 0, &UnknownValueError{Kind: "cut", Value: s, Valid: names(Cuts())}
}

// Disposition is what the remote command does when its transport dies.
type Disposition int

const (
	// Survive: the command keeps running and writes its complete marker,
	// as under OpenSSH without a pty.
	Survive Disposition = iota + 1
	// Hangup: the command's process group is killed when the transport drops,
	// as with a pty.
	Hangup
	// RemoteKill: the server kills the command right after its start marker,
	// whatever the transport does.
	RemoteKill
)

var dispositionNames = [...]string{Survive: "survive", Hangup: "hangup", RemoteKill: "remote-kill"}

// Dispositions returns every disposition.
func Dispositions() []Disposition { return []Disposition{Survive, Hangup, RemoteKill} }

func (d Disposition) valid() bool { return d >= Survive && d <= RemoteKill }

func (d Disposition) String() string {
	if !d.valid() {
		return fmt.Sprintf("Disposition(%d)", int(d))
	}
	return dispositionNames[d]
}

// MarshalText implements encoding.TextMarshaler.
func (d Disposition) MarshalText() ([]byte, error) {
	if !d.valid() {
		return nil, fmt.Errorf("fault: invalid disposition %d", int(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Disposition) UnmarshalText(b []byte) error {
	v, err := ParseDisposition(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDisposition parses a disposition name such as "remote-kill".
func ParseDisposition(s string) (Disposition, error) {
	for d := Survive; d <= RemoteKill; d++ {
		if dispositionNames[d] == s {
			return d, nil
		}
	}
	return 0, &UnknownValueError{Kind: "disposition", Value: s, Valid: names(Dispositions())}
}

// MattersAt reports whether d can change the remote truth of a cut at m,
// i.e. whether a matrix should vary it there. remote-kill applies only where
// the command has not yet passed its start marker.
func (d Disposition) MattersAt(m Moment) bool {
	switch m {
	case Exec, Started, None:
		return true
	case Output:
		return d != RemoteKill
	}
	return d == Survive
}

// AppliesAt reports whether a case may combine d with moment m: the server
// kills a remote-kill command right after its start marker, so it can never
// reach output, finished or exit-status.
func (d Disposition) AppliesAt(m Moment) bool {
	return d != RemoteKill || m < Output || m == None
}

// UnknownValueError reports a value that is not one of a kind's valid names.
type UnknownValueError struct {
	Kind  string   // "moment", "cut", "disposition"
	Value string   // what was given
	Valid []string // every valid name, in definition order
}

func (e *UnknownValueError) Error() string {
	return fmt.Sprintf("unknown %s %q (valid: %s)", e.Kind, e.Value, strings.Join(e.Valid, ", "))
}

func names[T fmt.Stringer](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

// Credential is a credential scenario: a credential the server accepted once,
// at the case's set-up, and rejects at the real call.
type Credential int

const (
	// ExpiredCertificate: an SSH user certificate from the run's CA, valid at
	// set-up, expired (by the server's clock for the case) at the call.
	ExpiredCertificate Credential = iota + 1
	// RevokedKey: a key of the case's own, authorized at set-up and revoked
	// before the call.
	RevokedKey
)

var credentialNames = [...]string{ExpiredCertificate: "expired-certificate", RevokedKey: "revoked-key"}

// Credentials returns every credential scenario.
func Credentials() []Credential { return []Credential{ExpiredCertificate, RevokedKey} }

func (c Credential) String() string {
	if c < ExpiredCertificate || c > RevokedKey {
		return fmt.Sprintf("Credential(%d)", int(c))
	}
	return credentialNames[c]
}

// ParseCredential parses a credential scenario name.
func ParseCredential(s string) (Credential, error) {
	for _, c := range Credentials() {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, &UnknownValueError{Kind: "credential", Value: s, Valid: names(Credentials())}
}

// Refusal is a way the server refuses the work for a reason other than a
// credential.
type Refusal int

const (
	// DenyExec: authenticated, but the server refuses to run the command
	// for this user (its exec request is answered with failure).
	DenyExec Refusal = iota + 1
	// RejectSession: the server rejects the session channel with SSH's
	// resource-shortage reason: refused for load.
	RejectSession
)

var refusalNames = [...]string{DenyExec: "deny-exec", RejectSession: "reject-session"}

// Refusals returns every refusal.
func Refusals() []Refusal { return []Refusal{DenyExec, RejectSession} }

func (r Refusal) String() string {
	if r < DenyExec || r > RejectSession {
		return fmt.Sprintf("Refusal(%d)", int(r))
	}
	return refusalNames[r]
}

// ParseRefusal parses a refusal name.
func ParseRefusal(s string) (Refusal, error) {
	for _, r := range Refusals() {
		if r.String() == s {
			return r, nil
		}
	}
	return 0, &UnknownValueError{Kind: "refusal", Value: s, Valid: names(Refusals())}
}

// Hop is, for a case whose target is reached through a jump host (a bastion,
// `ssh -J`), the hop whose transport the cut kills. The moment is always the
// target's: the cut lands when the target's exchange reaches it, on either
// hop.
type Hop int

const (
	// ClientJump is the tool's own connection to the jump host: the first
	// hop. The jump host then loses its side of the tunnel, and closes the
	// connection it opened to the target, as sshd does.
	ClientJump Hop = iota + 1
	// JumpTarget is the jump host's connection to the target: the second
	// hop. The tool's connection to the jump host stays up; only the tunnel
	// inside it dies (or, for a blackhole, goes silent).
	JumpTarget
)

var hopNames = [...]string{ClientJump: "client-jump", JumpTarget: "jump-target"}

// Hops returns every hop.
func Hops() []Hop { return []Hop{ClientJump, JumpTarget} }

func (h Hop) String() string {
	if h < ClientJump || h > JumpTarget {
		return fmt.Sprintf("Hop(%d)", int(h))
	}
	return hopNames[h]
}

// ParseHop parses a hop name.
func ParseHop(s string) (Hop, error) {
	for _, h := range Hops() {
		if h.String() == s {
			return h, nil
		}
	}
	return 0, &UnknownValueError{Kind: "hop", Value: s, Valid: names(Hops())}
}

// MarshalText implements encoding.TextMarshaler.
func (h Hop) MarshalText() ([]byte, error) {
	if h < ClientJump || h > JumpTarget {
		return nil, fmt.Errorf("fault: invalid hop %d", int(h))
	}
	return []byte(h.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *Hop) UnmarshalText(b []byte) error {
	v, err := ParseHop(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}
