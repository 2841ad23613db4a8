package target

import (
	"context"
	"time"
)

// Endpoint is a running server as the rig reaches it.
type Endpoint struct {
	SSHAddr     string // where cutters and probes connect
	ControlAddr string
	// RigHost is the IP address at which the server reaches listeners of
	// the rig's ("127.0.0.1" for a server on this machine's loopback), or
	// "" when it cannot: a case with a jump host (the server being its own
	// bastion) needs it, for the jump host's connections to the target.
	RigHost string
	// Where says in words where the server runs, for reports.
	Where string
	// Stop stops the server and waits until it is gone.
	Stop func() error
	// Logs returns the server's last log lines, for reports; may be nil.
	Logs func() string
	// ReadLedger, when set, reads the ledger out of band (not over SSH),
	// e.g. by copying it out of a container: a second, independent reading
	// that must agree with the one over SSH.
	ReadLedger func(ctx context.Context) ([]byte, error)
	// ReadLedgerOf, when set, is ReadLedger for one correlation id: only
	// the ledger's lines that mention it. A long run's ledger grows by every
	// case run, so a case that reads all of it costs more the later it runs.
	ReadLedgerOf func(ctx context.Context, id string) ([]byte, error)
	// Alive, when set, reports whether the server is still running, and if
	// not, why (a container that died).
	Alive func(ctx context.Context) (bool, string)
	// Reboot, when set, restarts the server's host for real: every process
	// of it dies, the host stays down for pause, and it comes back with its
	// files (the scratch directory: hosts and ledger), its control token
	// and its host key, but none of its processes, its server started
	// anew. It returns once that server is ready, saying where it listens
	// now. Only a Rebooter's LaunchRebootable sets it.
	Reboot func(ctx context.Context, pause time.Duration) (Reboot, error)
}

// Reboot is what a real restart took, and where the server listens since.
type Reboot struct {
	SSHAddr, ControlAddr string
	// Stop is from the kill to the host's processes all gone; Down from
	// then to the start; Start from the start to the server's ready line.
	Stop, Down, Start time.Duration
}

// Launcher starts a server that authenticates the rig with token.
type Launcher interface {
	Launch(ctx context.Context, token []byte) (*Endpoint, error)
}

// Rebooter is a Launcher that can also start a server on a host of one
// case's own, which Endpoint.Reboot restarts for real (fault.Reboot on the
// container target). Another case's server never shares that host: it is
// the only one a restart takes down.
type Rebooter interface {
	Launcher
	LaunchRebootable(ctx context.Context, token []byte) (*Endpoint, error)
}

// TokenEnv is the environment variable `sshrig serve` reads its control
// token from (hex): a Launcher hands the token it is given to the server
// this way. Environment, not argv: argv is visible to every user.
const TokenEnv = "SSHRIG_CONTROL_TOKEN"

// HostKeyEnv is the environment variable `sshrig serve` reads its SSH host
// key from (a private key in PEM), when set: a Launcher that restarts the
// server (Endpoint.Reboot) hands it the same key every time, so the key the
// tool pinned is the one it meets after the restart.
const HostKeyEnv = "SSHRIG_HOST_KEY"
