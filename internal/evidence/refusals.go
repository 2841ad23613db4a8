package evidence

import (
	"fmt"
	"strings"

	"github.com/sshrig/sshrig/internal/control"
)

// Refusals lists, in the server's order, what the server refused or did not
// understand in the case's conversation: requests it answered with failure
// (a pty-req it does not allow, an env variable, an unknown subsystem),
// exec requests it denied, sessions it rejected and keys it turned down.
// Each is one line a person can act on, naming the connection and session.
func (c Case) Refusals() []string {
	var out []string
	for _, e := range c.events {
		where := fmt.Sprintf("connection %d", e.Conn)
		if e.Session > 0 {
			where += fmt.Sprintf(", session %d", e.Session)
		}
		var what string
		switch {
		case e.Kind == control.RequestSeen && e.Accepted != nil && !*e.Accepted:
			what = "refused request " + e.Request
			if e.Detail != "" {
				what += " (" + e.Detail + ")"
			}
		case e.Kind == control.ExecRefused, e.Kind == control.SessionRefused, e.Kind == control.AuthRejected:
			what = string(e.Kind)
			if e.Detail != "" {
				what += ": " + e.Detail
			}
		case e.Kind == control.ConnRejected:
			what = "connection rejected: " + e.Detail
		default:
			continue
		}
		out = append(out, what+" ["+where+"]")
	}
	return out
}

// Tail is the case's last n server events, one short line each, for a person
// reading why a case went wrong.
func (c Case) Tail(n int) []string {
	from := max(0, len(c.events)-n)
	out := make([]string, 0, len(c.events)-from)
	for _, e := range c.events[from:] {
		var b strings.Builder
		fmt.Fprintf(&b, "#%d %s conn %d", e.Seq, e.Kind, e.Conn)
		if e.Session > 0 {
			fmt.Fprintf(&b, " session %d", e.Session)
		}
		if e.Moment != 0 {
			fmt.Fprintf(&b, " moment %s", e.Moment)
		}
		if e.Request != "" {
			fmt.Fprintf(&b, " request %s", e.Request)
		}
		if e.ExitCode != nil {
			fmt.Fprintf(&b, " exit %d", *e.ExitCode)
		}
		if e.Signal != "" {
			fmt.Fprintf(&b, " signal %s", e.Signal)
		}
		if e.Detail != "" {
			fmt.Fprintf(&b, ": %s", e.Detail)
		}
		out = append(out, b.String())
	}
	return out
}
