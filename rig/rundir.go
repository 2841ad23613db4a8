package rig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/tool"
)

// RunDir is a run's output directory:
//
//	report.json         the report, with the event log's head (seq:hash)
//	events.jsonl        the hash-chained event log of the run (package
//	                    eventlog): the rig's, the server's and the tool's
//	                    events; verify it with sshrig verify
//	transcripts/ID.json per case: the tool's output, the server's events, the cut, the truth
type RunDir struct {
	Path string
	// LogCommands puts the text of commands in the log; by default only
	// their operation name and digest appear (command text may carry data
	// nobody meant to log).
	LogCommands bool
	// filter, when set, decides which entries reach the log. A run never
	// needs it; tests use it to show that a missing event fails assertion 4.
	filter func(eventlog.Entry) bool

	log *eventlog.Writer
	// temporary: a directory of the run's own (Options.Out was nil), removed
	// when the run ends, so the report keeps its case runs in memory.
	temporary bool

	mu       sync.Mutex
	cases    map[string]string          // correlation id -> case id
	finished []string                   // correlation ids of ended case runs, oldest first
	logged   map[string]map[string]bool // correlation id -> the rig's events written
	// secrets are the sets of things the log must never contain (the
	// run's, and each running case's own key); forJSON is all of them in
	// the forms a JSON line can hold them, computed when the sets change
	// rather than for every line.
	secrets map[int][]secret.Secret
	nextSet int
	forJSON []secret.Secret
	err     error
}

// keepBound is how many ended case runs keep their correlation id bound to
// their case: the server's last events of a case reach the log after the
// case ended (through the control tap), but never a thousand case runs late.
const keepBound = 1024

// DefaultRunDir is a new dated directory under base (./sshrig-runs).
func DefaultRunDir(base string, now time.Time) string {
	return filepath.Join(base, now.UTC().Format("20060102-150405.000"))
}

// CreateRunDir creates the directory (and transcripts/) and a new event log.
func CreateRunDir(path string) (*RunDir, error) {
	if err := os.MkdirAll(filepath.Join(path, "transcripts"), 0o755); err != nil {
		return nil, err
	}
	w, err := eventlog.Create(filepath.Join(path, eventlog.FileName))
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s already holds a run (events.jsonl exists): choose a new directory", path)
		}
		return nil, err
	}
	d := &RunDir{Path: path, log: w, cases: map[string]string{}, logged: map[string]map[string]bool{}, secrets: map[int][]secret.Secret{}}
	// The log never carries key material, whatever a tool printed.
	w.SetRedactor(func(line []byte) []byte {
		d.mu.Lock()
		secrets := d.forJSON
		d.mu.Unlock()
		return secret.Redact(line, secrets)
	})
	return d, nil
}

// addSecrets adds things the log must never contain, until remove is called
// (a case's own key, once the case has ended and logged everything of its
// own); a long run does not redact every line against every key it made.
func (d *RunDir) addSecrets(s []secret.Secret) (remove func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.nextSet
	d.nextSet++
	d.secrets[n] = s
	d.secretsChanged()
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.secrets, n)
		d.secretsChanged()
	}
}

// secretsChanged recomputes forJSON; d.mu is held.
func (d *RunDir) secretsChanged() {
	var all []secret.Secret
	for _, n := range slices.Sorted(maps.Keys(d.secrets)) { // the run's first, then each case's
		all = append(all, d.secrets[n]...)
	}
	d.forJSON = secret.ForJSON(all)
}

// ended forgets what the log kept about a case run that has ended: which
// of the rig's events it wrote (asked only while the case runs), and, some
// case runs later, its case binding.
func (d *RunDir) ended(correlationID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.logged, correlationID)
	d.finished = append(d.finished, correlationID)
	if len(d.finished) > keepBound {
		delete(d.cases, d.finished[0])
		d.finished = slices.Delete(d.finished, 0, 1)
	}
}

// Bind attributes a correlation id to its case in the log.
func (d *RunDir) Bind(correlationID, caseID string) {
	d.mu.Lock()
	d.cases[correlationID] = caseID
	d.mu.Unlock()
}

// Log appends one entry.
func (d *RunDir) Log(source, event, correlationID string, data map[string]any) {
	d.mu.Lock()
	caseID := d.cases[correlationID]
	d.mu.Unlock()
	e := eventlog.Entry{Source: source, Event: event, Case: caseID, CorrelationID: correlationID, Data: data}
	if d.filter != nil && !d.filter(e) {
		return
	}
	_, err := d.log.Append(e)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if d.err == nil {
			d.err = fmt.Errorf("event log: %w", err)
		}
		return
	}
	// Only the rig's own events are asked about (Logged), and only while the
	// case runs; the server's arrive through the tap, also after it ended.
	if correlationID != "" && source == eventlog.SourceRig {
		if d.logged[correlationID] == nil {
			d.logged[correlationID] = map[string]bool{}
		}
		d.logged[correlationID][event] = true
	}
}

// Logged reports whether an event was written for the correlation id.
func (d *RunDir) Logged(correlationID, event string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logged[correlationID][event]
}

// logEvent appends a server event. Commands appear by digest only: the
// server's events never carry command text.
func (d *RunDir) logEvent(e control.Event) {
	data := map[string]any{"server_seq": e.Seq, "server_time": e.Time.UTC().Format(time.RFC3339Nano)}
	add := func(k string, v any, zero bool) {
		if !zero {
			data[k] = v
		}
	}
	add("conn", e.Conn, e.Conn == 0)
	add("session", e.Session, e.Session == 0)
	add("moment", e.Moment.String(), e.Moment == 0)
	add("hold", e.Hold, !e.Hold)
	add("sent", e.Sent, e.Sent == 0)
	add("ref", e.Ref, e.Ref == 0)
	add("pid", e.PID, e.PID == 0)
	add("marker_id", e.MarkerID, e.MarkerID == "")
	add("digest", e.Digest, e.Digest == "")
	if e.ExitCode != nil {
		data["exit_code"] = *e.ExitCode
	}
	add("signal", e.Signal, e.Signal == "")
	add("detail", e.Detail, e.Detail == "")
	if e.Upload != nil {
		data["upload"] = e.Upload
	}
	d.Log(eventlog.SourceServer, string(e.Kind), e.Case, data)
}

// Head is the event log's head, "seq:hash", as report.json records it.
func (d *RunDir) Head() string {
	return eventlog.FormatHead(d.log.Head())
}

// transcript is transcripts/ID.json.
type transcript struct {
	Case       string             `json:"case"`
	Verdict    report.Verdict     `json:"verdict"`
	Target     transcriptTarget   `json:"target"`
	Stdout     string             `json:"stdout"`
	Stderr     string             `json:"stderr"`
	ToolMS     int64              `json:"tool_ms"`
	Hung       bool               `json:"hung"`
	Exit       *tool.ProcessExit  `json:"exit,omitempty"` // how the tool\'s program ended
	Cut        *engine.CutRecord  `json:"cut,omitempty"`
	Landed     bool               `json:"landed"`
	NotLanded  string             `json:"not_landed,omitempty"`
	Settled    bool               `json:"settled"`
	Ledger     []string           `json:"ledger"` // the case's marker lines
	Events     []control.Event    `json:"events"`
	Violations []report.Violation `json:"violations"`
	// Conversation is every request of the tool's SSH conversation in the case.
	Conversation []fault.Request `json:"conversation"`
	// Agent, for an agent under test, is every call it made with the
	// result it saw, and its final answers.
	Agent *report.AgentReport `json:"agent,omitempty"`
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

// writeTranscript writes the case's transcript and returns its path relative
// to the run directory. Secrets the tool printed are redacted.
// amendTranscript puts a decision the run amended after the case run (an
// ambiguous report) into its transcript, which the case run wrote with the
// decision it had then.
func (d *RunDir) amendTranscript(cr report.CaseReport) {
	if cr.Transcript == "" || d.temporary {
		return
	}
	path := filepath.Join(d.Path, cr.Transcript)
	b, err := os.ReadFile(path)
	var tx map[string]any
	if err == nil {
		err = json.Unmarshal(b, &tx)
	}
	if err == nil {
		tx["verdict"], tx["violations"] = cr.Verdict, cr.Violations
		b, err = json.MarshalIndent(tx, "", "  ")
	}
	if err == nil {
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err != nil {
		d.mu.Lock()
		if d.err == nil {
			d.err = fmt.Errorf("transcript %s: %w", cr.Transcript, err)
		}
		d.mu.Unlock()
	}
}

func (d *RunDir) writeTranscript(run *caseRun, cr caseResult) string {
	c, t, tr, ev, secrets := run.c, run.t, run.tr, run.ev, run.secrets
	tx := transcript{
		Case:    c.ID,
		Verdict: cr.Verdict,
		Target: transcriptTarget{Addr: t.Addr, User: t.User, CorrelationID: t.CorrelationID,
			Operation: t.Operation, Command: t.Command, DeadlineMS: t.Deadline.Milliseconds()},
		Stdout:       string(secret.Redact(tr.stdout, secrets)),
		Stderr:       string(secret.Redact(tr.stderr, secrets)),
		ToolMS:       tr.duration.Milliseconds(),
		Hung:         tr.hung,
		Exit:         tr.exit,
		Cut:          ev.Cut,
		Landed:       ev.Landed,
		NotLanded:    ev.NotLanded,
		Settled:      ev.Settled,
		Ledger:       ev.Ledger.Lines(cr.CorrelationID),
		Events:       ev.Events,
		Violations:   cr.Violations,
		Conversation: cr.conversation,
		Agent:        cr.Agent,
	}
	name := filepath.Join("transcripts", transcriptName(c)+".json")
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

func safeName(id string) string {
	return strings.NewReplacer("/", "_", string(os.PathSeparator), "_").Replace(id)
}

// WriteFile writes a file into the run directory.
func (d *RunDir) WriteFile(name string, b []byte) error {
	return os.WriteFile(filepath.Join(d.Path, name), b, 0o644)
}

// Close closes the event log and reports the first write error.
func (d *RunDir) Close() error {
	err := d.log.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil && d.err == nil {
		d.err = err
	}
	return d.err
}
