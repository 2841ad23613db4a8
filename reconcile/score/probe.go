package score

// Finding kinds: how a probe run broke the probe contract.
const (
	// FindingHang: no answer within the probe timeout. A local probe is
	// killed with its whole process group; a remote one has its session
	// closed and its processes on the target killed.
	FindingHang = "hang"
	// FindingCrash: the probe exited non-zero without a valid answer, or a
	// signal killed it.
	FindingCrash = "crash"
	// FindingMalformed: the probe exited 0, but its stdout is not one
	// valid answer; the detail names the parse error.
	FindingMalformed = "malformed_answer"
	// FindingLeftRunning: processes the probe started were still running
	// after it exited (its process group locally, its commands on the
	// target); the rig killed them.
	FindingLeftRunning = "left_running"
	// FindingReran: the probe ran the operation's command itself. A
	// reconciliation probe inspects; it never executes the operation.
	FindingReran = "reran_operation"
	// FindingSecret: the probe printed the run's private key (or a
	// recognisable part of it). The report keeps it redacted.
	FindingSecret = "secret"
)

// Finding is one way a probe run broke the probe contract. Any finding
// fails the run (exit 1), even next to a right answer.
type Finding struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// ProbeRun is how one run of the probe went.
type ProbeRun struct {
	// Where: "local" (a process on this machine) or "remote" (a command on
	// the target).
	Where       string `json:"where"`
	ExitCode    int    `json:"exit_code"`        // -1 when a signal ended it or it never ran
	Signal      string `json:"signal,omitempty"` // the signal that ended it
	Hung        bool   `json:"hung,omitempty"`
	DurationMS  int64  `json:"duration_ms"`
	Stdout      string `json:"stdout"`
	StdoutBytes int64  `json:"stdout_bytes"`
	Stderr      string `json:"stderr"`
	// LeftRunning: pids of the local probe's process group still alive
	// after it exited (killed by the rig).
	LeftRunning []int `json:"left_running,omitempty"`
	// Err is how a remote probe's session ended without an exit status.
	Err string `json:"error,omitempty"`
	// RigErr: the rig could not run the probe at all (no connection to
	// the target, no process). That is the rig's failure, not the probe's.
	RigErr string `json:"rig_error,omitempty"`
}
