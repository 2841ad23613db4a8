package gotool_test

import (
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/sshrigtest"
)

// A test holds the rig's server and drives its own x/crypto/ssh client
// through it, with no tool.Tool: the transport is reset once the command
// started, which the server then hangs up, as an sshd does with a pty.
func TestHeldServerCutAtStarted(t *testing.T) {
	srv := sshrigtest.NewServer(t)
	op := srv.Arm(fault.Started, fault.Reset, sshrigtest.Disposition(fault.Hangup))
	client, err := ssh.Dial("tcp", srv.Addr(), srv.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Run(op.Command()); err == nil {
		t.Fatal("the command ran to its end through a cut at started")
	}
	if truth := op.Truth(); truth.State != reconcile.Started {
		t.Errorf("truth %s, want started", truth)
	}
	j := op.Judge(result.Result{Category: result.ConfirmedFailure, Retry: result.Never,
		CorrelationID: op.ID(), Operation: op.Operation()})
	if j.Verdict != sshrigtest.Fail || j.Grade != sshrigtest.Unsafe {
		t.Errorf("confirmed_failure after the cut, judged:\n%s", j)
	}
}
