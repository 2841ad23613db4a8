package reconcile

import (
	"bytes"
	"context"
	"fmt"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/markers"
)

// ReadLedger reads the ledger at path over a fresh session of client, with
// cat: it works against any SSH server.
func ReadLedger(ctx context.Context, client *gossh.Client, path string) (*markers.Ledger, error) {
	return readLedger(ctx, client, "cat -- "+markers.Quote(path))
}

// ReadLedgerOf reads, as ReadLedger does, only the ledger's lines that
// mention id (with grep -F, as BusyBox has it too): a long run's ledger holds
// every case run's markers, and a truth is about one id. An id with no line
// is an empty ledger, not an error. An id "" reads the whole ledger.
func ReadLedgerOf(ctx context.Context, client *gossh.Client, path, id string) (*markers.Ledger, error) {
	if id == "" {
		return ReadLedger(ctx, client, path)
	}
	return readLedger(ctx, client, "grep -F -e "+markers.Quote(id+" ")+" -- "+markers.Quote(path)+" || test $? -eq 1")
}

// readLedger runs command on a fresh session and parses what it prints.
func readLedger(ctx context.Context, client *gossh.Client, command string) (*markers.Ledger, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("reconcile: open session: %w", err)
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	var out, errOut bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errOut
	if err := sess.Run(command); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reconcile: read ledger: %w", ctx.Err())
		}
		return nil, fmt.Errorf("reconcile: read ledger: %v: %s", err, bytes.TrimSpace(errOut.Bytes()))
	}
	return markers.ParseBytes(out.Bytes()), nil
}
