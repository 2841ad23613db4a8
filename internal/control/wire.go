package control

import (
	"fmt"
	"time"

	"github.com/sshrig/sshrig/fault"
)

// ProtocolVersion is bumped on any incompatible change to the messages below.
const ProtocolVersion = 1

// EventKind names what the server observed.
type EventKind string

// Event kinds, in roughly the order a case produces them.
const (
	ConnAccepted   EventKind = "conn_accepted"   // a proxied connection arrived with a valid preamble
	ConnRejected   EventKind = "conn_rejected"   // bad preamble or unknown case; Detail says why
	MomentReached  EventKind = "moment"          // Moment reached; Hold says whether the server is holding
	Released       EventKind = "released"        // the hold announced by event Ref ended
	TransportLost  EventKind = "transport_lost"  // first read or write error on the connection
	AuthAccepted   EventKind = "auth_accepted"   // Detail is the method
	AuthRejected   EventKind = "auth_rejected"   // Detail is the method and reason
	SessionOpened  EventKind = "session_open"    // a session channel was requested
	SessionClosed  EventKind = "session_close"   // the session's handling finished
	ExecReceived   EventKind = "exec"            // Digest of the command; MarkerID (and OperationID) if it is marker-wrapped
	ExecRefused    EventKind = "exec_refused"    // the server refused to run the command; Detail says why
	SessionRefused EventKind = "session_refused" // the server rejected a session channel; Detail says why
	ExecSkipped    EventKind = "exec_skipped"    // hangup: the transport died before the command started
	ProcSpawned    EventKind = "proc_spawned"    // PID is the process group leader (/bin/sh)
	ProcStartGate  EventKind = "proc_start_gate" // the wrapper stopped itself right after its start marker
	ProcWorkDone   EventKind = "proc_work_done"  // the wrapper stopped itself after the work, before its complete marker
	ProcStopped    EventKind = "proc_stopped"    // the server stopped the process group for a hold
	ProcResumed    EventKind = "proc_resumed"    // the server continued the process group
	ProcKilled     EventKind = "proc_killed"     // the server sent SIGKILL to the group; Detail says why
	ProcHungUp     EventKind = "proc_hangup"     // the server closed the command's terminal (the kernel sends SIGHUP); Detail says why
	ProcExited     EventKind = "proc_exited"     // ExitCode, or Signal if killed by a signal
	ExitSent       EventKind = "exit_sent"       // exit-status (or exit-signal) written to the channel
	ExecFinished   EventKind = "exec_finished"   // the server is done with an exec request (every ExecReceived gets one)
	CaseEnded      EventKind = "case_ended"      // the rig ended the case; everything of it is gone
	ServerProblem  EventKind = "problem"         // something the rig should see; Detail says what
	// ServerFaulted: the server made the far side's fault the rig asked
	// for at a hold (OpFault): Moment and Detail say which and what it did.
	ServerFaulted EventKind = "server_fault"
	// ExitWithheld: a command's channel ended, or went silent, without the
	// exit status the server had (a NoExitStatus or EOFOnly fault); Detail
	// says what the channel got instead.
	ExitWithheld EventKind = "exit_withheld"
	// CaseAdopted: a server that started after the case's host went down
	// (a real restart of its container, fault.Reboot) set the case up
	// again on the files the host kept (Request.Adopt). It is a boot
	// boundary: no process the case had before it runs any more, and
	// process ids after it are a new boot's.
	CaseAdopted EventKind = "case_adopted"

	// RequestSeen records one step of the tool's SSH conversation, in the order
	// the server received it: Request names it (see the Step* constants),
	// Step numbers it within the case, Accepted says how the server answered,
	// Detail carries what the step names (an env variable, a subsystem, a
	// signal, an SFTP path). Session 0 is a connection-level request.
	RequestSeen EventKind = "request"
	// Workload marks the request whose process tree wrote the case's start
	// marker: Ref is that request's event, Step its step, MarkerID the
	// marker and MarkerPID the shell that wrote it (the process the server
	// started, or any descendant of it).
	Workload EventKind = "workload"
	// UploadState says what an upload a step case cut left on the case's
	// host, measured as the case ends, before its host is removed: Upload
	// holds it. A case cuts at most one upload.
	UploadState EventKind = "upload_state"
)

// Steps of a conversation, as Event.Request names them. Channel requests and
// global requests keep their SSH names ("pty-req", "env", "exec", "shell",
// "subsystem", "window-change", "signal", "keepalive@openssh.com", ...); the
// rest are named here.
const (
	StepConnection = fault.ConnectionRequest // a proxied connection named its case
	StepSession    = "session"               // a session channel was opened
	// StepDirectTCPIP: a direct-tcpip channel (a jump host's tunnel) was
	// asked for; Detail names its destination.
	StepDirectTCPIP = "direct-tcpip"
	StepSFTPPrefix  = "sftp-"             // an SFTP request: "sftp-open", "sftp-write", "sftp-close", "sftp-setstat", ...
	StepGlobal      = fault.GlobalRequest // prefix of a connection-level request's name
	// StepSCPUpload records where a step case cut a legacy scp upload
	// (Detail: the scp command and UploadCut's text). SFTP uploads are
	// recorded by their failed sftp-write.
	StepSCPUpload = "scp-upload"
)

// UploadCut is what a request's Detail says where a step case cut an upload
// after n bytes of the file arrived: the rest was dropped, the file is left
// partial (UploadState says what it holds).
func UploadCut(n int64) string {
	return fmt.Sprintf("upload cut after %d bytes: the file is left partial", n)
}

// Event is one observation of the server, attributed to a case.
type Event struct {
	Seq     uint64       `json:"seq"`
	Time    time.Time    `json:"time"`
	Kind    EventKind    `json:"kind"`
	Case    string       `json:"case,omitempty"`
	Conn    int          `json:"conn,omitempty"`
	Session int          `json:"session,omitempty"`
	Moment  fault.Moment `json:"moment,omitzero"`
	Hold    bool         `json:"hold,omitempty"`
	// HeldCall, on a hold: the server held another command of the case
	// than its workload (Arm.HoldCommand): an agent's lookup or note.
	HeldCall bool   `json:"held_call,omitempty"`
	Sent     int64  `json:"sent,omitempty"` // bytes the server had written on the connection
	Ref      uint64 `json:"ref,omitempty"`  // the event a Released refers to
	PID      int    `json:"pid,omitempty"`
	MarkerID string `json:"marker_id,omitempty"`
	// OperationID (ExecReceived, ExecRefused) is the operation id set in
	// front of a marker-wrapped command (markers.WithOperationID).
	OperationID string `json:"operation_id,omitempty"`
	Digest      string `json:"digest,omitempty"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Signal      string `json:"signal,omitempty"`
	Detail      string `json:"detail,omitempty"`

	// Conversation fields (Request and Workload events).
	Request   string `json:"request,omitempty"`    // the step's name
	Step      int    `json:"step,omitempty"`       // 1-based, per case, in arrival order
	Accepted  *bool  `json:"accepted,omitempty"`   // how the server answered the request
	MarkerPID int    `json:"marker_pid,omitempty"` // the pid in the start marker (ProcStartGate, ProcWorkDone, Workload)
	// OutputCaptured (ProcStartGate): the markers' shell writes its stdout
	// somewhere other than the session's stdout (a wrapper captures it, as
	// a module does), so what the session prints is the wrapper's own.
	OutputCaptured bool `json:"output_captured,omitempty"`

	// Via, for a connection that reached the target through a jump host's
	// tunnel, is the jump-host connection carrying that tunnel
	// (ConnAccepted, and a hold armed on the first hop). ViaSent, on such
	// a hold, is how many bytes the server had written on Via once the
	// tunnel had relayed the Sent bytes of the target's; 0 when the tunnel
	// ended before it had.
	Via     int   `json:"via,omitempty"`
	ViaSent int64 `json:"via_sent,omitempty"`

	// Upload is an UploadState event's measurement.
	Upload *Upload `json:"upload,omitempty"`
}

// Upload is what an upload a step case cut left on the case's host.
type Upload struct {
	// Path is the file as the tool named it: the absolute path its SFTP
	// request resolved to, or scp -t's target with the file's name when
	// the target is a directory.
	Path string `json:"path"`
	// Arrived is how many bytes of the file reached the server before the
	// cut; the rest was dropped.
	Arrived int64 `json:"arrived"`
	// Size and SHA256 are the file's on the host as the case ends (what a
	// copier wrote of the bytes that arrived: scp -t may write none).
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// TempFiles are the other files in the file's directory that an
	// upload of the case began and never finished (a copier that writes
	// NAME.tmp and renames it leaves one behind), by name.
	TempFiles []string `json:"temp_files,omitempty"`
	// Absent says why there is no file to measure: the tool removed it,
	// or it lies outside the case's host. Size and SHA256 are then unset.
	Absent string `json:"absent,omitempty"`
	// Rewritten: an upload of the same name finished after the cut, so
	// the file is no longer what the cut left.
	Rewritten bool `json:"rewritten,omitempty"`
}

// Arm tells the server where to hold for a case and what the command does when
// its transport dies.
type Arm struct {
	Moment      fault.Moment      `json:"moment,omitzero"`
	Disposition fault.Disposition `json:"disposition,omitzero"`
	// OutputBytes is N for the output moment: hold once N bytes of the
	// workload's stdout were written to the channel. Named while another
	// moment (or none) is armed, it makes the server announce the output
	// moment there unheld, so the case's timeline shows it.
	OutputBytes int64 `json:"output_bytes,omitempty"`
	// WorkloadRequest, when > 0, says the workload is the case's Nth exec
	// or shell request (1-based, counting both), as a preflight learned it:
	// the exec moment holds there. When 0, the exec moment holds at the
	// first exec request carrying a marker-wrapped command, or at the first
	// shell request (whose commands arrive on stdin, unseen). The moments
	// from started on always follow the request whose process tree passes
	// the start gate.
	WorkloadRequest int `json:"workload_request,omitempty"`
	// HoldCommand, when set, moves the case's moments from the workload to
	// another command of the case: the SHA-256 (hex) of an exec request's
	// command. The moments exec, output, finished and exit-status hold at
	// the first exec request whose command has that digest (an agent's
	// lookup or note call, cut while its create ran whole); the workload's
	// own request and its process tree then hold nothing. Started, which
	// only a marker-wrapped command reaches, is never armed with it.
	HoldCommand string `json:"hold_command,omitempty"`
	// AnswerDelay, when > 0, is how long the server waits before it
	// answers each of the case's channel requests (pty-req, env, exec,
	// shell, subsystem, ...): a perturbation of the server's timing, drawn
	// per case run by the rig (sshrig run --answer-delay).
	AnswerDelay time.Duration `json:"answer_delay,omitempty"`
	// Step, for the moments prep-step and cleanup-step, is the request of
	// the tool's conversation to hold at (after it arrived, before the
	// server answers it), or the upload to cut after Step.UploadBytes.
	Step *fault.Step `json:"step,omitempty"`
	// Jump, when set, makes the cutter's connections of the case those of
	// a jump host (a bastion): the server serves direct-tcpip on them, to
	// Jump.Target only, and the armed moment holds only on the
	// connections that arrived through one of those tunnels: the target's.
	Jump *Jump `json:"jump,omitempty"`
}

// Jump is a case's jump host (Arm.Jump).
type Jump struct {
	// Target is the address ("host:port") the jump host connects a
	// tunnel to: the case's second cutter, in front of the server again.
	// direct-tcpip to any other address is refused, as sshd's PermitOpen
	// does.
	Target string `json:"target"`
	// Hop is the hop the cut kills. For fault.ClientJump the held moment
	// waits until the tunnel has relayed every byte the target had sent,
	// and names the jump-host connection (Event.Via) and how many bytes
	// the server had written on it then (Event.ViaSent): the cut on the
	// tool's own connection lands after the same bytes.
	Hop fault.Hop `json:"hop"`
}

// JumpTargetConn is the first connection number of a case's second cutter,
// which carries the jump host's tunnels to the target: the target's
// connections are numbered from it, the jump host's below it.
const JumpTargetConn = 1001

// JumpHostConn is ConnAccepted's Detail for a connection to the jump host of
// a case with a jump host: it does not reach the target.
const JumpHostConn = "jump host"

// Op names a request from the rig.
type Op string

const (
	OpAuthorize Op = "authorize" // set the user name and public keys allowed to log in
	OpSetupCase Op = "setup_case"
	OpRelease   Op = "release"  // end the hold announced by event Seq
	OpEndCase   Op = "end_case" // kill what is left of the case, close its connections, forget it
	OpPing      Op = "ping"
	// OpCredential changes a case's credential after it was used once:
	// Action "expire" moves the case's certificate clock past every
	// certificate's validity, "revoke" removes the case's own keys.
	OpCredential Op = "credential"
	// OpFault makes the far side's fault Fault (fault.ServerSide) at the
	// hold announced by event Seq, which stays held until OpRelease;
	// OpHostUp brings a rebooted case's host back (fault.Reboot).
	OpFault  Op = "fault"
	OpHostUp Op = "host_up"
)

// Request is a message from the rig to the server.
type Request struct {
	ID   uint64 `json:"id"`
	Op   Op     `json:"op"`
	Case string `json:"case,omitempty"`
	Arm  *Arm   `json:"arm,omitempty"`
	Seq  uint64 `json:"seq,omitempty"`
	User string `json:"user,omitempty"`
	// Probe marks a case as the rig's own probe connection, whose sessions
	// read the ledger (the engine's follower) and are never a tool's.
	Probe bool `json:"probe,omitempty"`
	// SharedHost: the case runs on the server's one shared host (the
	// scratch directory as home, the machine's /tmp), as the probe does,
	// instead of a host of its own: for a sequence of cases that must see
	// one host's state (reconciliation's set-up, operation and probe).
	SharedHost bool `json:"shared_host,omitempty"`
	// CaseKeys are authorized_keys lines accepted for this case only, in
	// addition to the run's keys; CA is a user certificate authority
	// (authorized_keys format) whose certificates this case accepts.
	CaseKeys []string `json:"case_keys,omitempty"`
	CA       string   `json:"ca,omitempty"`
	// DenyExec: the server refuses every exec request of the case (the user
	// is authenticated but not allowed to run the command).
	DenyExec bool `json:"deny_exec,omitempty"`
	// RejectSession: the server rejects session channels with SSH's
	// resource-shortage reason (refused for load).
	RejectSession bool `json:"reject_session,omitempty"`
	// RefusePTY: the server refuses pty-req, as an sshd with PermitTTY no
	// does (the session goes on without a terminal).
	RefusePTY bool `json:"refuse_pty,omitempty"`
	// Adopt: the case's host survives from before this server started
	// (its container restarted): the case is set up again on the host's
	// existing files instead of a fresh host, and CaseAdopted says so.
	Adopt bool `json:"adopt,omitempty"`
	// Fault is OpFault's fault.
	Fault fault.Cut `json:"fault,omitzero"`
	// Action is OpCredential's action: "expire" or "revoke".
	Action string   `json:"action,omitempty"`
	Keys   []string `json:"keys,omitempty"` // authorized_keys lines
}

// Reply answers the request with the same ID.
type Reply struct {
	ID    uint64 `json:"id"`
	Error string `json:"error,omitempty"`
}

// Ready describes the server once the rig has authenticated.
type Ready struct {
	Version int    `json:"version"`
	PID     int    `json:"pid"`
	HostKey string `json:"host_key"` // authorized_keys format
	Scratch string `json:"scratch"`  // the commands' working directory
	Ledger  string `json:"ledger"`   // where marker-wrapped commands should write
	Shell   string `json:"shell"`
}

type hello struct {
	Version int    `json:"version"`
	Nonce   string `json:"nonce"` // hex; the rig answers with HMAC-SHA256(token, nonce)
}

type authMsg struct {
	MAC string `json:"mac"`
}

// envelope is one line on the wire. Exactly one field is set.
type envelope struct {
	Hello   *hello   `json:"hello,omitempty"`
	Auth    *authMsg `json:"auth,omitempty"`
	Ready   *Ready   `json:"ready,omitempty"`
	Event   *Event   `json:"event,omitempty"`
	Request *Request `json:"request,omitempty"`
	Reply   *Reply   `json:"reply,omitempty"`
	Error   string   `json:"error,omitempty"` // fatal: the server closes after sending it
}
