package sshrigtest_test

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/sshrigtest"
)

// runCommand runs cmd once over a plain x/crypto/ssh client dialled to the
// server's address. Every read and write of the connection ends by
// deadline, or as soon as cut is closed: a blackholed transport is noticed
// only that way.
func runCommand(srv *sshrigtest.Server, cmd string, deadline time.Duration, cut <-chan struct{}) error {
	conn, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(deadline))
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-cut:
			conn.SetDeadline(time.Now())
		case <-done:
		}
	}()
	c, chans, reqs, err := ssh.NewClientConn(conn, srv.Addr(), srv.ClientConfig())
	if err != nil {
		return err
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	return sess.Run(cmd)
}

// A cut at each moment of the command window, of each kind, with the
// test's own client: the client sees the transport die where the moment
// says, and the truth is what the moment, cut and disposition imply
// (engine.ExpectTruth, which the rig's own tests hold the server to).
func TestServerCutsTheClientsOwnConnection(t *testing.T) {
	srv := sshrigtest.NewServer(t)
	for _, tc := range []struct {
		moment fault.Moment
		cut    fault.Cut
		d      fault.Disposition
		exit   int
	}{
		{fault.Accept, fault.Reset, fault.Survive, 0},
		{fault.Exec, fault.Reset, fault.Survive, 0},
		{fault.Exec, fault.Close, fault.Hangup, 0},
		{fault.Started, fault.Reset, fault.Hangup, 0},
		{fault.Started, fault.Close, fault.RemoteKill, 0},
		{fault.Started, fault.Blackhole, fault.Survive, 0},
		{fault.Output, fault.Reset, fault.Hangup, 0},
		{fault.Finished, fault.Close, fault.Survive, 0},
		{fault.Finished, fault.Blackhole, fault.Survive, 0},
		{fault.ExitStatus, fault.Reset, fault.Survive, 3},
		{fault.ExitStatus, fault.Close, fault.Survive, 0},
		{fault.None, 0, fault.Survive, 3},
	} {
		op := srv.Arm(tc.moment, tc.cut, sshrigtest.Disposition(tc.d), sshrigtest.ExitCode(tc.exit))
		t.Run(op.Name(), func(t *testing.T) {
			// Nothing ends a blackholed exchange but the client: this one
			// gives up as soon as the cut happened.
			var cut <-chan struct{}
			if tc.cut == fault.Blackhole {
				cut = op.CutDone()
			}
			err := runCommand(srv, op.Command(), 30*time.Second, cut)
			var exitErr *ssh.ExitError
			switch {
			case tc.moment >= fault.ExitStatus && tc.exit == 0 && err != nil:
				t.Errorf("the client received the exit status, yet: %v", err)
			case tc.moment >= fault.ExitStatus && tc.exit != 0 && (!errors.As(err, &exitErr) || exitErr.ExitStatus() != tc.exit):
				t.Errorf("the client received exit status %d, yet: %v", tc.exit, err)
			case tc.moment < fault.ExitStatus && err == nil:
				t.Error("the client ran the command to its end through a cut before the exit status")
			}
			truth := op.Truth()
			want := engine.ExpectTruth(tc.moment, tc.cut, tc.d)
			if truth.State != want || !truth.Landed || !truth.Settled {
				t.Errorf("truth %s, want %s, landed and settled", truth, want)
			}
			if want == reconcile.Completed && (truth.ExitCode == nil || *truth.ExitCode != tc.exit) {
				t.Errorf("truth %s, want exit %d", truth, tc.exit)
			}
			if _, err := os.Stat(truth.Evidence); err != nil {
				t.Errorf("evidence file: %v", err)
			}
		})
	}
}

// The judgement of a report is the rig's: outcome_unknown is exact after a
// cut once the command started, confirmed_failure is unsafe and contradicts
// the server, and a result for another operation breaks the evidence rules.
func TestServerJudgesReports(t *testing.T) {
	srv := sshrigtest.NewServer(t)
	op := srv.Arm(fault.Started, fault.Reset, sshrigtest.Disposition(fault.Hangup))
	if err := runCommand(srv, op.Command(), 30*time.Second, nil); err == nil {
		t.Fatal("the command ran to its end through a cut at started")
	}
	report := func(cat result.Category, retry result.Retry) result.Result {
		return result.Result{Category: cat, Retry: retry, CorrelationID: op.ID(), Operation: op.Operation(),
			Message: "the connection was reset"}
	}
	honest := op.Judge(report(result.OutcomeUnknown, result.ReconcileFirst))
	if honest.Verdict != sshrigtest.Pass || honest.Grade != sshrigtest.Exact || len(honest.Violations) != 0 {
		t.Errorf("an honest report:\n%s", honest)
	}
	liar := op.Judge(report(result.ConfirmedFailure, result.Never))
	if liar.Verdict != sshrigtest.Fail || liar.Grade != sshrigtest.Unsafe || !liar.Caught("unsafe_category") || !liar.Caught("contradiction") {
		t.Errorf("confirmed_failure after a cut at started:\n%s", liar)
	}
	msg := liar.String()
	for _, want := range []string{"started.reset.hangup: fail (unsafe)", "reported: confirmed_failure/never",
		"honest:   outcome_unknown/reconcile_first", "remotely: started (1 start, 0 complete marker(s))",
		"violation: category/unsafe_category", "evidence: " + liar.Truth.Evidence} {
		if !strings.Contains(msg, want) {
			t.Errorf("the judgement's text lacks %q:\n%s", want, msg)
		}
	}
	other := report(result.OutcomeUnknown, result.ReconcileFirst)
	other.CorrelationID = "c-someone-else"
	if j := op.Judge(other); j.Verdict != sshrigtest.Fail || !j.Caught("correlation_id") {
		t.Errorf("a report with another correlation id:\n%s", j)
	}
	bad := report(result.Succeeded, result.Never) // ok false contradicts succeeded
	if j := op.Judge(bad); j.Verdict != sshrigtest.Fail || j.ParseError == "" || !j.Caught("malformed_result") {
		t.Errorf("an invalid result:\n%s", j)
	}
}

// Where the exit status reached the client before the cut, reporting it is
// exact: the judgement sees what the server delivered (without it, a
// confirmed_failure would contradict the server's record).
func TestServerJudgesADeliveredExitStatus(t *testing.T) {
	srv := sshrigtest.NewServer(t)
	op := srv.Arm(fault.ExitStatus, fault.Reset, sshrigtest.ExitCode(3))
	var exitErr *ssh.ExitError
	if err := runCommand(srv, op.Command(), 30*time.Second, nil); !errors.As(err, &exitErr) || exitErr.ExitStatus() != 3 {
		t.Fatalf("the client got %v, want exit status 3", err)
	}
	j := op.Judge(result.Result{Category: result.ConfirmedFailure, Retry: result.Never, CorrelationID: op.ID(),
		Operation: op.Operation(), Message: "exit status 3"})
	if j.Verdict != sshrigtest.Pass || j.Grade != sshrigtest.Exact {
		t.Errorf("confirmed_failure after exit status 3 arrived:\n%s", j)
	}
	if j := op.Judge(result.Result{Category: result.OutcomeUnknown, Retry: result.ReconcileFirst, CorrelationID: op.ID(),
		Operation: op.Operation()}); j.Verdict != sshrigtest.Pass || j.Grade != sshrigtest.Conservative {
		t.Errorf("outcome_unknown after exit status 3 arrived:\n%s", j)
	}
}

// The address stays the same while operations change; a connection with
// nothing armed runs uncut; a new Arm ends the operation before it, whose
// truth can still be asked.
func TestServerAddressOutlivesOperations(t *testing.T) {
	srv := sshrigtest.NewServer(t)
	addr := srv.Addr()
	if err := runCommand(srv, "true", 30*time.Second, nil); err != nil {
		t.Fatalf("a command with nothing armed: %v", err)
	}
	first := srv.Arm(fault.None, 0)
	if err := runCommand(srv, first.Command(), 30*time.Second, nil); err != nil {
		t.Fatalf("first operation: %v", err)
	}
	second := srv.Arm(fault.Started, fault.Reset)
	if got := first.Truth(); got.State != reconcile.Completed {
		t.Errorf("first operation, ended by the next Arm: %s", got)
	}
	if err := runCommand(srv, second.Command(), 30*time.Second, nil); err == nil {
		t.Error("second operation: no cut")
	}
	if got := second.Truth(); got.State != reconcile.Completed || srv.Addr() != addr {
		t.Errorf("second operation: %s at %s (first at %s)", got, srv.Addr(), addr)
	}
}

// An x/crypto/ssh client that checks known_hosts (as OpenSSH's ssh does
// with UserKnownHostsFile) accepts the server; another host key is refused.
func TestServerKnownHostsPinsTheHostKey(t *testing.T) {
	srv := sshrigtest.NewServer(t)
	b, err := os.ReadFile(srv.KnownHosts())
	if err != nil {
		t.Fatal(err)
	}
	_, hosts, key, _, _, err := ssh.ParseKnownHosts(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 1 || hosts[0] != "["+strings.Replace(srv.Addr(), ":", "]:", 1) {
		t.Errorf("known_hosts names %v, want %s", hosts, srv.Addr())
	}
	cfg := srv.ClientConfig()
	if err := cfg.HostKeyCallback(srv.Addr(), nil, key); err != nil {
		t.Errorf("the client config refuses the known_hosts key: %v", err)
	}
	if _, err := os.Stat(srv.Identity()); err != nil {
		t.Errorf("identity: %v", err)
	}
}

// Close twice returns the first result; Arm without any connection, then
// Close, leaves no goroutine, no key file and (once the test passed) no
// run directory.
func TestServerCloseLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var identity, dir string
	t.Run("held", func(t *testing.T) {
		srv := sshrigtest.NewServer(t)
		identity, dir = srv.Identity(), srv.Dir()
		srv.Arm(fault.Started, fault.Reset)
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if _, err := os.Stat(identity); !os.IsNotExist(err) {
			t.Errorf("the key file after Close: %v", err)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the run directory after a passed test: %v", err)
	}
}

// failedTB is a test that has failed by the time its cleanups run.
type failedTB struct {
	*testing.T
	cleanups []func()
	logs     []string
}

func (f *failedTB) Cleanup(fn func())            { f.cleanups = append(f.cleanups, fn) }
func (f *failedTB) Failed() bool                 { return true }
func (f *failedTB) Logf(format string, a ...any) { f.logs = append(f.logs, format) }

// When the test fails, the run directory and the evidence files the failure
// names are still there afterwards.
func TestServerKeepsItsDirectoryOnFailure(t *testing.T) {
	ft := &failedTB{T: t}
	srv := sshrigtest.NewServer(ft)
	op := srv.Arm(fault.Exec, fault.Reset)
	runCommand(srv, op.Command(), 30*time.Second, nil)
	truth := op.Truth()
	for i := len(ft.cleanups) - 1; i >= 0; i-- {
		ft.cleanups[i]()
	}
	defer os.RemoveAll(srv.Dir())
	for _, p := range []string{srv.Dir(), srv.KnownHosts(), truth.Evidence} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("after the failed test: %v", err)
		}
	}
	b, _ := os.ReadFile(truth.Evidence)
	if !strings.Contains(string(b), op.ID()) {
		t.Errorf("the evidence file does not name the operation %s", op.ID())
	}
	if len(ft.logs) == 0 {
		t.Error("nothing logged about the kept directory")
	}
}
