package rig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/markers"
	"github.com/sshrig/sshrig/tool"
)

// RunDir is a run's output directory:
//
//	report.json         the report
//	events.jsonl        every server event of the run, one JSON object per line
//	transcripts/ID.json per case: the tool's output, the server's events, the cut, the truth
type RunDir struct {
	Path string

	mu     sync.Mutex
	events *os.File
	err    error
}

// DefaultRunDir is a new dated directory under base (./sshrig-runs).
func DefaultRunDir(base string, now time.Time) string {
	return filepath.Join(base, now.UTC().Format("20060102-150405.000"))
}

// CreateRunDir creates the directory (and transcripts/) and opens the event log.
func CreateRunDir(path string) (*RunDir, error) {
	if err := os.MkdirAll(filepath.Join(path, "transcripts"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(path, "events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &RunDir{Path: path, events: f}, nil
}

// LogEvent appends a server event to events.jsonl. Commands appear by digest
// only: the server's events never carry command text.
func (d *RunDir) LogEvent(e control.Event) {
	b, err := json.Marshal(e)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		_, err = d.events.Write(append(b, '\n'))
	}
	if err != nil && d.err == nil {
		d.err = err
	}
}

// transcript is transcripts/ID.json.
type transcript struct {
	Case       string              `json:"case"`
	Verdict    verdict.Status      `json:"verdict"`
	Target     transcriptTarget    `json:"target"`
	Stdout     string              `json:"stdout"`
	Stderr     string              `json:"stderr"`
	ToolMS     int64               `json:"tool_ms"`
	Hung       bool                `json:"hung"`
	Exit       *tool.ProcessExit   `json:"exit,omitempty"` // how the tool\'s program ended
	Cut        *engine.CutRecord   `json:"cut,omitempty"`
	Landed     bool                `json:"landed"`
	NotLanded  string              `json:"not_landed,omitempty"`
	Settled    bool                `json:"settled"`
	Ledger     []string            `json:"ledger"` // the case's marker lines
	Events     []control.Event     `json:"events"`
	Violations []verdict.Violation `json:"violations"`
}

// transcriptTarget is the Target without anything secret: the identity
// file's path is left out, the command is kept (it carries no secret).
type transcriptTarget struct {
	Addr          string `json:"addr"`
	User          string `json:"user"`
	CorrelationID string `json:"correlation_id"`
	Operation     string `json:"operation"`
	Command       string `json:"command"`
	DeadlineMS    int64  `json:"deadline_ms"`
}

// WriteTranscript writes the case's transcript and returns its path relative
// to the run directory. Secrets the tool printed are redacted.
func (d *RunDir) WriteTranscript(c Case, cr CaseReport, t tool.Target, tr toolRun, ev *engine.Evidence, secrets []verdict.Secret) string {
	tx := transcript{
		Case:    c.ID,
		Verdict: cr.Verdict,
		Target: transcriptTarget{Addr: t.Addr, User: t.User, CorrelationID: t.CorrelationID,
			Operation: t.Operation, Command: t.Command, DeadlineMS: t.Deadline.Milliseconds()},
		Stdout:     string(redact(tr.stdout, secrets)),
		Stderr:     string(redact(tr.stderr, secrets)),
		ToolMS:     tr.duration.Milliseconds(),
		Hung:       tr.hung,
		Exit:       tr.exit,
		Cut:        ev.Cut,
		Landed:     ev.Landed,
		NotLanded:  ev.NotLanded,
		Settled:    ev.Settled,
		Ledger:     ledgerLines(ev.Ledger, cr.CorrelationID),
		Events:     ev.Events,
		Violations: cr.Violations,
	}
	name := filepath.Join("transcripts", safeName(c.ID)+".json")
	b, err := json.MarshalIndent(tx, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(d.Path, name), append(b, '\n'), 0o644)
	}
	if err != nil {
		d.mu.Lock()
		if d.err == nil {
			d.err = fmt.Errorf("transcript %s: %w", name, err)
		}
		d.mu.Unlock()
	}
	return name
}

func ledgerLines(l *markers.Ledger, id string) []string {
	out := []string{}
	if l == nil {
		return out
	}
	for _, e := range l.Entries {
		if e.ID == id {
			out = append(out, e.String())
		}
	}
	return out
}

func safeName(id string) string {
	return strings.NewReplacer("/", "_", string(os.PathSeparator), "_").Replace(id)
}

// WriteFile writes a file into the run directory.
func (d *RunDir) WriteFile(name string, b []byte) error {
	return os.WriteFile(filepath.Join(d.Path, name), b, 0o644)
}

// Close closes the event log and reports the first write error.
func (d *RunDir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.events.Close(); err != nil && d.err == nil {
		d.err = err
	}
	return d.err
}
