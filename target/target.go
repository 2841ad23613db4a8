package target

import "context"

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
}

// Launcher starts a server that authenticates the rig with token.
type Launcher interface {
	Launch(ctx context.Context, token []byte) (*Endpoint, error)
}

// TokenEnv is the environment variable `sshrig serve` reads its control
// token from (hex): a Launcher hands the token it is given to the server
// this way. Environment, not argv: argv is visible to every user.
const TokenEnv = "SSHRIG_CONTROL_TOKEN"
