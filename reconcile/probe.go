package reconcile

import (
	"bytes"
	"context"
	"fmt"
	"io"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/markers"
)

// ReadLedger reads the ledger at path over a fresh session of client, with
// cat: it works against any SSH server.
func ReadLedger(ctx context.Context, client *gossh.Client, path string) (*markers.Ledger, error) {
	return readLedger(ctx, client, "cat -- "+shellQuote(path), "")
}

// ReadLedgerSubsystem reads the ledger over a fresh session of client through
// the named subsystem of the rig's own server, which streams the file without
// spawning a process.
func ReadLedgerSubsystem(ctx context.Context, client *gossh.Client, subsystem string) (*markers.Ledger, error) {
	return readLedger(ctx, client, "", subsystem)
}

// readLedger runs command, or requests subsystem, on a fresh session and
// parses what it prints.
func readLedger(ctx context.Context, client *gossh.Client, command, subsystem string) (*markers.Ledger, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("reconcile: open session: %w", err)
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	var out, errOut bytes.Buffer
	if subsystem == "" {
		sess.Stdout, sess.Stderr = &out, &errOut
		err = sess.Run(command)
	} else {
		// x/crypto starts no copying for a subsystem: read stdout to EOF.
		var pipe io.Reader
		if pipe, err = sess.StdoutPipe(); err == nil {
			if err = sess.RequestSubsystem(subsystem); err == nil {
				_, err = io.Copy(&out, pipe)
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reconcile: read ledger: %w", ctx.Err())
		}
		return nil, fmt.Errorf("reconcile: read ledger: %v: %s", err, bytes.TrimSpace(errOut.Bytes()))
	}
	return markers.ParseBytes(out.Bytes()), nil
}

func shellQuote(s string) string {
	return "'" + string(bytes.ReplaceAll([]byte(s), []byte("'"), []byte(`'\''`))) + "'"
}
