package reconcile

import (
	"fmt"

	"github.com/sshrig/sshrig/markers"
)

// RemoteCommand is the command line that runs probe on the target with
// SSHRIG_CORRELATION_ID, SSHRIG_OPERATION and SSHRIG_LEDGER set (an SSH
// server need not accept environment from clients, so they go in front of
// it). exec makes the probe's shell the process the server started, so its
// exit status, or the signal that killed it, is what the caller receives.
// shell is the target's shell; empty means /bin/sh.
//
// sshrig reconcile --remote runs probes this way, and a matrix case's
// reconcile_probe reaches the tool under test in this form.
func RemoteCommand(probe, shell, id, operation, ledger string) string {
	if shell == "" {
		shell = "/bin/sh"
	}
	return fmt.Sprintf("SSHRIG_CORRELATION_ID=%s SSHRIG_OPERATION=%s SSHRIG_LEDGER=%s; export SSHRIG_CORRELATION_ID SSHRIG_OPERATION SSHRIG_LEDGER; exec %s -c %s",
		markers.Quote(id), markers.Quote(operation), markers.Quote(ledger), markers.Quote(shell), markers.Quote(probe))
}
