package rig

import (
	"bytes"
	"strings"

	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/secret"
)

// diagnosis is what both sides of a case say about why it went wrong: what
// the server refused, the server's last events and the tool's stderr tail.
// The preflight's message carries it, because "host unreachable" alone sends a
// person hunting; the report has the same facts in the transcript.
type diagnosis struct {
	refused    []string
	lastEvents []string
	stderrTail string
}

// How much of each side a preflight message quotes.
const (
	diagnosisEvents    = 8
	diagnosisStderrLen = 8
)

func diagnose(evs evidence.Case, stderr []byte, secrets []secret.Secret) *diagnosis {
	d := &diagnosis{refused: evs.Refusals(), lastEvents: evs.Tail(diagnosisEvents)}
	lines := strings.Split(strings.TrimRight(string(secret.Redact(bytes.TrimSpace(stderr), secrets)), "\n"), "\n")
	if len(lines) > diagnosisStderrLen {
		lines = lines[len(lines)-diagnosisStderrLen:]
	}
	d.stderrTail = strings.TrimSpace(strings.Join(lines, "\n"))
	return d
}

// String is the diagnosis as indented lines under a one-line reason.
func (d *diagnosis) String() string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		b.WriteString("\n  " + title + ":")
		for _, l := range lines {
			b.WriteString("\n    " + l)
		}
	}
	section("the server refused", d.refused)
	section("the server's last events", d.lastEvents)
	if d.stderrTail != "" {
		section("the tool's stderr ends", strings.Split(d.stderrTail, "\n"))
	}
	return b.String()
}
