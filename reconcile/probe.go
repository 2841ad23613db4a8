package reconcile

import (
	"bytes"
	"context"
	"fmt"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/markers"
)

// ReadLedger reads the ledger at path over a fresh session of client. A ledger
// that does not exist yet reads as empty: nothing has written a marker.
func ReadLedger(ctx context.Context, client *gossh.Client, path string) (*markers.Ledger, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("reconcile: open session: %w", err)
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	var out, errOut bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errOut
	cmd := "if [ -e " + shellQuote(path) + " ]; then cat -- " + shellQuote(path) + "; fi"
	if err := sess.Run(cmd); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reconcile: read ledger: %w", ctx.Err())
		}
		return nil, fmt.Errorf("reconcile: read ledger %s: %v: %s", path, err, bytes.TrimSpace(errOut.Bytes()))
	}
	return markers.ParseBytes(out.Bytes()), nil
}

func shellQuote(s string) string {
	return "'" + string(bytes.ReplaceAll([]byte(s), []byte("'"), []byte(`'\''`))) + "'"
}
