package server_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/server"
	"github.com/sshrig/sshrig/markers"
)

// TestCutAtStarted: a reset at started under a terminal and in a shell
// session. With hangup the command ends at started (under a terminal by the
// kernel's SIGHUP, which the server's process events show); with survive it
// completes.
func TestCutAtStarted(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"pty", "shell"} {
		for _, disp := range []fault.Disposition{fault.Hangup, fault.Survive} {
			t.Run(kind+"/"+disp.String(), func(t *testing.T) {
				t.Parallel()
				r := newRig(t, server.Config{})
				c := r.newCase(control.Arm{Moment: fault.Started, Disposition: disp}, nil)
				c.cutAndRelease(fault.Reset)
				work := c.wrap("echo working; exit 6")
				var out string
				var code int
				if kind == "pty" {
					out, code = run(t, "", "ssh", append(c.sshArgs("-p"), "-tt", testUser+"@127.0.0.1", work)...)
				} else {
					out, code = run(t, work+"\n", "ssh", append(c.sshArgs("-p"), "-T", testUser+"@127.0.0.1")...)
				}
				if code != 255 {
					t.Fatalf("ssh exit %d after a reset, want 255; output %q", code, out)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if !c.waitFor(ctx, func(e control.Event) bool { return e.Kind == control.ProcExited }) {
					t.Fatal("the command never exited")
				}
				ev := c.Events()
				exited := find(ev, control.ProcExited)[0]
				l := c.ledger()
				switch disp {
				case fault.Hangup:
					if len(l) != 1 || l[0].Kind != markers.Start {
						t.Errorf("ledger %+v, want only a start marker", l)
					}
					if kind == "pty" && exited.Signal != "SIGHUP" {
						t.Errorf("under a terminal the command ended with %+v, want SIGHUP", exited)
					}
					if kind == "shell" && exited.Signal == "" {
						t.Errorf("the shell session's command exited %v, want killed", exited.ExitCode)
					}
				case fault.Survive:
					c.checkRan(6)
					if exited.ExitCode == nil || *exited.ExitCode != 6 {
						t.Errorf("the command ended with %+v, want exit 6", exited)
					}
				}
				if kind == "pty" && len(find(ev, control.ProcHungUp)) == 0 {
					t.Errorf("no %s event: %v", control.ProcHungUp, strings.Join(steps(ev), " "))
				}
			})
		}
	}
}

// TestLostBeforeSaid: a connection counts as lost before its TransportLost
// event leaves. The rig releases a held exec once it has seen the event,
// and the server then decides the request by whether the connection is
// lost: said first, a hangup case could start its command on a connection
// the rig had seen die.
func TestLostBeforeSaid(t *testing.T) {
	r := newRig(t, server.Config{})
	// The hook runs right after the event left: the test waits for the
	// hook's word, not for the event, which may reach it first.
	said := make(chan bool, 16)
	stop := server.OnLossSaid(func(l bool) { said <- l })
	defer stop()
	c := r.newCase(control.Arm{}, nil)
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !c.waitFor(ctx, func(e control.Event) bool { return e.Kind == control.ConnAccepted }) {
		t.Fatal("the connection never arrived")
	}
	conn.Close()
	select {
	case lost := <-said:
		if !lost {
			t.Error("the loss was said before the connection counted as lost")
		}
	case <-ctx.Done():
		t.Fatal("the loss was never said")
	}
}
