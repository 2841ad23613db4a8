package engine

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// TestJumpHostOpensOnlyTheTarget: the server is a jump host only for a case
// that has one, and opens tunnels to that case's target only; anything else
// is refused as sshd's PermitOpen refuses it, and the refusal is recorded.
func TestJumpHostOpensOnlyTheTarget(t *testing.T) {
	env := startEnv(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	plain, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: fault.None})
	if err != nil {
		t.Fatal(err)
	}
	c, err := plain.DialTool(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Dial("tcp", plain.Addr())
	c.Close()
	var oce *gossh.OpenChannelError
	if !errors.As(err, &oce) || oce.Reason != gossh.Prohibited {
		t.Errorf("a tunnel from a host that is no jump host: %v, want administratively prohibited", err)
	}
	ev, err := plain.Finish(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !refusedTunnel(ev.Events) {
		t.Error("no refused direct-tcpip request in the events")
	}

	jumped, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: fault.None, Hop: fault.JumpTarget})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := jumped.Dial(ctx, &net.Dialer{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sc, chans, reqs, err := gossh.NewClientConn(conn, jumped.JumpAddr(), jumped.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	jc := gossh.NewClient(sc, chans, reqs)
	defer jc.Close()
	if _, err := jc.Dial("tcp", "127.0.0.1:1"); !errors.As(err, &oce) || oce.Reason != gossh.Prohibited || !strings.Contains(err.Error(), jumped.Addr()) {
		t.Errorf("a tunnel elsewhere than the target: %v, want administratively prohibited, naming %s", err, jumped.Addr())
	}
	tunnel, err := jc.Dial("tcp", jumped.Addr())
	if err != nil {
		t.Fatalf("the tunnel to the target: %v", err)
	}
	// A handshake through it: the target's server has then accepted the
	// tunnel's connection. Closed at once, the tunnel could end before the
	// target's cutter reached the server, and the events would not show it.
	tc, tchans, treqs, err := gossh.NewClientConn(tunnel, jumped.Addr(), jumped.ClientConfig())
	if err != nil {
		t.Fatalf("a handshake with the target through the tunnel: %v", err)
	}
	gossh.NewClient(tc, tchans, treqs).Close()
	jc.Close()
	ev, err = jumped.Finish(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	jumpHost, target := 0, 0
	for _, e := range ev.Events {
		if e.Kind != control.ConnAccepted {
			continue
		}
		switch {
		case e.Detail == control.JumpHostConn && e.Conn < control.JumpTargetConn:
			jumpHost++
		case e.Conn >= control.JumpTargetConn && e.Via == 1:
			target++
		}
	}
	if jumpHost != 1 || target != 1 {
		t.Errorf("connections: %d to the jump host, %d to the target through its tunnel; want 1 and 1", jumpHost, target)
	}
}

// TestJumpHostBypassed: a client that dials the target itself, not through
// the jump host, never reaches the case's moment there: the cut does not
// land, and the server says why.
func TestJumpHostBypassed(t *testing.T) {
	env := startEnv(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: fault.Started, Cut: fault.Reset, Hop: fault.JumpTarget})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", run.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sc, chans, reqs, err := gossh.NewClientConn(conn, run.Addr(), run.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := gossh.NewClient(sc, chans, reqs)
	cmd, _ := run.Wrap(workload(0))
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(cmd); err != nil {
		t.Fatalf("the command, run beside the jump host: %v", err)
	}
	c.Close()
	ev, err := run.Finish(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Landed || !ev.NeverReached {
		t.Errorf("landed %v, never reached %v (%s): want a cut that never came", ev.Landed, ev.NeverReached, ev.NotLanded)
	}
	said := false
	for _, e := range ev.Events {
		said = said || e.Kind == control.ServerProblem && strings.Contains(e.Detail, "without the jump host")
	}
	if !said {
		t.Error("the server did not say the connection bypassed the jump host")
	}
}

func refusedTunnel(events []control.Event) bool {
	for _, e := range events {
		if e.Kind == control.RequestSeen && e.Request == control.StepDirectTCPIP && e.Accepted != nil && !*e.Accepted {
			return true
		}
	}
	return false
}
