package evidence

import (
	"strings"
	"testing"

	"github.com/sshrig/sshrig/internal/control"
)

func TestRefusals(t *testing.T) {
	no, yes := false, true
	events := []control.Event{
		{Seq: 1, Kind: control.ConnAccepted, Conn: 1},
		{Seq: 2, Kind: control.RequestSeen, Conn: 1, Session: 1, Request: "pty-req", Accepted: &no, Detail: "xterm"},
		{Seq: 3, Kind: control.RequestSeen, Conn: 1, Session: 1, Request: "exec", Accepted: &yes},
		{Seq: 4, Kind: control.ExecRefused, Conn: 1, Session: 2, Detail: "denied"},
		{Seq: 5, Kind: control.AuthRejected, Conn: 2, Detail: "publickey: key not authorized"},
	}
	got := Of(events, "c-1").Refusals()
	want := []string{
		"refused request pty-req (xterm) [connection 1, session 1]",
		"exec_refused: denied [connection 1, session 2]",
		"auth_rejected: publickey: key not authorized [connection 2]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Refusals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := Of(nil, "c-1").Refusals(); len(got) != 0 {
		t.Fatalf("no events: %v", got)
	}
}

func TestTail(t *testing.T) {
	code := 3
	events := []control.Event{
		{Seq: 1, Kind: control.ConnAccepted, Conn: 1},
		{Seq: 2, Kind: control.ExitSent, Conn: 1, Session: 1, ExitCode: &code},
		{Seq: 3, Kind: control.SessionClosed, Conn: 1, Session: 1},
	}
	got := Of(events, "c-1").Tail(2)
	want := []string{"#2 exit_sent conn 1 session 1 exit 3", "#3 session_close conn 1 session 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Tail(2) = %q, want %q", got, want)
	}
	if got := Of(events, "c-1").Tail(10); len(got) != 3 {
		t.Fatalf("Tail(10) has %d lines, want 3", len(got))
	}
}
