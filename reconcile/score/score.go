package score

import (
	"encoding/json"
	"io"
	"time"

	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
)

// Defaults for Options.
const (
	DefaultProbeTimeout = 10 * time.Second
	DefaultSettle       = 5 * time.Second
)

// ReportVersion is the version of the report's JSON format.
const ReportVersion = 1

// Options configure a scoring run.
type Options struct {
	// Probe is the probe command: a shell command line, run with /bin/sh -c.
	Probe string
	// Remote runs the probe on the target (over a fresh SSH session) instead
	// of locally.
	Remote bool
	// Operation is what the states are produced with; default the rig's
	// default workload.
	Operation *Operation
	// Target names the target in reports; default "embedded".
	Target string
	// ProbeTimeout bounds each probe run; default DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Settle bounds the wait for the operation's command to end before the
	// truth is read; default DefaultSettle.
	Settle time.Duration
	// Scenarios to produce, in order; default all (reconcile.Scenarios).
	Scenarios []reconcile.Scenario
	// Progress, when not nil, gets one line per state.
	Progress io.Writer
	// WriteFile, when not nil, receives a transcript per state
	// ("transcripts/NN-STATE.json").
	WriteFile func(name string, data []byte) error
}

// Report is the result of a scoring run (report.json).
type Report struct {
	Version      int       `json:"version"`
	Command      string    `json:"command"` // "reconcile"
	Operation    string    `json:"operation"`
	Probe        string    `json:"probe"`
	Remote       bool      `json:"remote"`
	Target       string    `json:"target"`
	Where        string    `json:"where"`
	Ledger       string    `json:"ledger"` // the ledger's path on the target
	Started      time.Time `json:"started"`
	ProbeTimeout string    `json:"probe_timeout"`
	// LogHead is the run's event log head, "seq:hash", set by whoever keeps
	// the log: sshrig verify checks the log against it, so a cut tail is
	// detected.
	LogHead    string            `json:"log_head,omitempty"`
	Preflight  *Row              `json:"preflight,omitempty"`
	Summary    Summary           `json:"summary"`
	Matrix     *reconcile.Matrix `json:"matrix"`
	WrongCells []reconcile.Cell  `json:"wrong_cells"`
	WeakCells  []reconcile.Cell  `json:"weak_cells"`
	Rows       []Row             `json:"rows"`
}

// Summary counts the rows by mark.
type Summary struct {
	States       int `json:"states"`
	Correct      int `json:"correct"`
	Weak         int `json:"weak"`
	Wrong        int `json:"wrong"`
	NoAnswer     int `json:"no_answer"`
	Inconclusive int `json:"inconclusive"`
	// WithFindings counts scored rows with at least one finding.
	WithFindings int   `json:"with_findings"`
	DurationMS   int64 `json:"duration_ms"`
}

// Failed reports whether the probe failed: a wrong answer, no answer, or a
// finding.
func (s Summary) Failed() bool { return s.Wrong+s.NoAnswer+s.WithFindings > 0 }

// Row is one produced state and the probe's answer about it.
type Row struct {
	State         reconcile.Scenario `json:"state"`
	CorrelationID string             `json:"correlation_id"`
	// NotProduced says why the rig did not produce the state (the rig's
	// fault, not the probe's); the row is then inconclusive and unscored.
	NotProduced string                 `json:"not_produced,omitempty"`
	Truth       *reconcile.TruthReport `json:"truth,omitempty"`
	Expected    reconcile.AnswerState  `json:"expected"`
	Answer      *reconcile.Answer      `json:"answer"`
	Mark        reconcile.Mark         `json:"mark"`
	Findings    []Finding              `json:"findings"`
	Probe       *ProbeRun              `json:"probe,omitempty"`
	Attempts    []Attempt              `json:"attempts"`
	DurationMS  int64                  `json:"duration_ms"`
	Transcript  string                 `json:"transcript,omitempty"`
}

// Attempt is what the rig's in-process client saw of one run of the
// operation's command through the case's cutter.
type Attempt struct {
	Err    string `json:"error,omitempty"`
	Exit   *int   `json:"exit_code,omitempty"`
	Signal string `json:"signal,omitempty"`
	Stdout string `json:"stdout"`
}

// PreflightError means the rig could not produce even a plain completed run
// of the operation, so no state can be trusted (its Case is nil).
type PreflightError = report.PreflightError

// WithDefaults returns o with what it leaves out filled in: the options a
// scoring run uses.
func (o Options) WithDefaults() Options {
	if o.Operation == nil {
		op, _ := LookupOperation(DefaultOperation)
		o.Operation = &op
	}
	if o.Target == "" {
		o.Target = "embedded"
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.Scenarios == nil {
		o.Scenarios = reconcile.Scenarios()
	}
	return o
}

// JSON is the report as report.json holds it.
func (rep *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
