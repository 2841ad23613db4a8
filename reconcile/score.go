// Scoring reconciliation probes.
//
// A reconciliation probe (a "reconcile command") is what a careful tool runs
// after an attempt whose outcome it cannot know, before anything else: it
// inspects the remote side and says what became of the attempt with a given
// correlation id. Seed 003: for commands that change state, build the
// reconciliation command before building a retry. A probe that answers
// "completed" for a command that never ran licenses a lost operation; one
// that answers "not started" for a command that ran licenses running it twice.
// So a probe is scored against the truth, never against what it was meant to
// do.
//
// The rig produces each Scenario for real (cuts and dispositions of the
// engine, one case run each, with a fresh id), checks with the truth Derive
// established that it produced what it meant to (Scenario.Check; a scenario
// the rig failed to produce is inconclusive and is never scored), runs the
// probe, reads its Answer strictly (ParseAnswer), and grades it (Grade):
//
//   - correct: the one right answer for the scenario (Scenario.Want);
//   - weak: "unknown". Honest, so allowed, but counted and shown: a probe that
//     never knows reconciles nothing;
//   - wrong: any other answer;
//   - no answer: the probe hung, crashed or printed something that is not an
//     answer. This counts as wrong: a caller waiting on it learns nothing.
//
// Matrix is the confusion matrix of scenarios (the truth) by answers; every
// cell off the right answer is named ("truth started-and-killed, probe said
// completed"), so a probe author sees which distinction the probe misses.

package reconcile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// AnswerState is what a probe says became of an attempt.
type AnswerState string

// The answers a probe may give.
const (
	AnswerNotStarted AnswerState = "not_started" // the command never began: safe to run it
	AnswerInProgress AnswerState = "in_progress" // it began and is still running: wait, do not retry
	AnswerCompleted  AnswerState = "completed"   // it ran to the end and did its work
	AnswerFailed     AnswerState = "failed"      // it began and did not succeed (killed, or exited non-zero)
	AnswerDuplicated AnswerState = "duplicated"  // it ran more than once for this id
	AnswerUnknown    AnswerState = "unknown"     // the probe cannot tell (weak, but honest)
)

// AnswerStates returns every answer, in the matrix's column order.
func AnswerStates() []AnswerState {
	return []AnswerState{AnswerNotStarted, AnswerInProgress, AnswerCompleted, AnswerFailed, AnswerDuplicated, AnswerUnknown}
}

func (a AnswerState) valid() bool {
	for _, s := range AnswerStates() {
		if a == s {
			return true
		}
	}
	return false
}

// Answer is a probe's answer: one JSON object on its stdout,
//
//	{"state": "not_started|in_progress|completed|failed|duplicated|unknown", "evidence": "..."}
//
// state is required; evidence is optional and free text for people.
type Answer struct {
	State    AnswerState `json:"state"`
	Evidence string      `json:"evidence,omitempty"`
}

// MaxAnswerSize is the most a probe may print on stdout, in bytes. An answer
// is a few hundred bytes; a caller reading a probe's stdout should keep
// MaxAnswerSize+1 bytes, enough for ParseAnswer to say it is too large.
const MaxAnswerSize = 64 << 10

// ParseAnswer reads exactly one answer from b, a probe's whole stdout. It is
// strict, as the result contract is: anything another reader could read
// differently is an error — trailing data (a second object, a log line), an
// unknown or duplicate field, a missing or unknown state, a value of the
// wrong type. Leading and trailing whitespace is allowed. The error says
// what is wrong and where, for the probe's author.
func ParseAnswer(b []byte) (Answer, error) {
	if len(b) > MaxAnswerSize {
		return Answer{}, fmt.Errorf("printed %d bytes or more; an answer is at most %d bytes", len(b), MaxAnswerSize)
	}
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if len(trimmed) == 0 {
		return Answer{}, errors.New(`empty output; want one JSON object such as {"state": "not_started", "evidence": "..."}`)
	}
	start := int64(len(b) - len(trimmed))
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return Answer{}, fmt.Errorf("invalid JSON at offset %d: %v", max(se.Offset-1, 0), err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return Answer{}, fmt.Errorf("invalid JSON: the output ends inside a value (offset %d)", len(b))
		}
		return Answer{}, fmt.Errorf("invalid JSON: %v", err)
	}
	if trimmed[0] != '{' {
		return Answer{}, fmt.Errorf("not a JSON object at offset %d (found %s)", start, kindOf(trimmed))
	}
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(b[end:], " \t\r\n"); len(rest) > 0 {
		return Answer{}, fmt.Errorf("trailing data after the JSON object at offset %d: %s", int64(len(b)-len(rest)), quoteShort(rest))
	}

	// The members, in document order, so duplicates and unknown fields are
	// caught (encoding/json would keep the last duplicate and ignore the
	// unknown ones, and match keys case-insensitively).
	mdec := json.NewDecoder(bytes.NewReader(raw))
	mdec.Token() // '{'
	seen := map[string]bool{}
	var a Answer
	for mdec.More() {
		tok, err := mdec.Token()
		if err != nil {
			return Answer{}, fmt.Errorf("invalid JSON: %v", err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := mdec.Decode(&val); err != nil {
			return Answer{}, fmt.Errorf("invalid JSON: %v", err)
		}
		if key != "state" && key != "evidence" {
			return Answer{}, fmt.Errorf("unknown field %q (allowed: state, evidence)", key)
		}
		if seen[key] {
			return Answer{}, fmt.Errorf("duplicate field %q; readers disagree on which one counts", key)
		}
		seen[key] = true
		var s string
		if err := json.Unmarshal(val, &s); err != nil || kindOf(val) != "a string" {
			return Answer{}, fmt.Errorf("field %q is %s, want a string", key, kindOf(val))
		}
		if key == "state" {
			a.State = AnswerState(s)
		} else {
			a.Evidence = s
		}
	}
	if !seen["state"] {
		return Answer{}, errors.New(`missing field "state"`)
	}
	if !a.State.valid() {
		return Answer{}, fmt.Errorf("unknown state %q (want one of: %s)", a.State, answerNames())
	}
	return a, nil
}

func answerNames() string {
	var s []string
	for _, a := range AnswerStates() {
		s = append(s, string(a))
	}
	return strings.Join(s, ", ")
}

// kindOf names the JSON value b starts with, for messages.
func kindOf(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func quoteShort(b []byte) string {
	const limit = 60
	if len(b) > limit {
		return fmt.Sprintf("%q...", b[:limit])
	}
	return fmt.Sprintf("%q", b)
}

// Scenario is a remote state the rig produces for real before asking a probe
// about it: a row of the confusion matrix.
type Scenario string

// The scenarios, each produced with one case run and a fresh id.
const (
	// NeverStarted: the exec request reached the server and the transport
	// was reset before the command started; with the hangup disposition it
	// never runs.
	NeverStarted Scenario = "never-started"
	// StartedKilled: the command wrote its start marker and the server
	// killed it right after (remote-kill).
	StartedKilled Scenario = "started-and-killed"
	// StillRunning: the command began its work and is still running while
	// the probe runs.
	StillRunning Scenario = "still-running"
	// CompletedZero: the command ran to the end and exited 0.
	CompletedZero Scenario = "completed-0"
	// CompletedNonZero: the command ran to the end and exited non-zero.
	CompletedNonZero Scenario = "completed-nonzero"
	// ExecutedTwice: the same command ran twice, to the end, for one id.
	ExecutedTwice Scenario = "executed-twice"
)

// Scenarios returns every scenario, in the matrix's row order.
func Scenarios() []Scenario {
	return []Scenario{NeverStarted, StartedKilled, StillRunning, CompletedZero, CompletedNonZero, ExecutedTwice}
}

// Want is the one correct answer for the scenario.
func (s Scenario) Want() AnswerState {
	switch s {
	case NeverStarted:
		return AnswerNotStarted
	case StartedKilled, CompletedNonZero:
		return AnswerFailed
	case StillRunning:
		return AnswerInProgress
	case CompletedZero:
		return AnswerCompleted
	case ExecutedTwice:
		return AnswerDuplicated
	}
	return ""
}

// Describe says what the scenario is, in words.
func (s Scenario) Describe() string {
	switch s {
	case NeverStarted:
		return "never started (no start marker)"
	case StartedKilled:
		return "started and killed (a start marker, no complete marker, the process gone)"
	case StillRunning:
		return "still running (a start marker, the process alive)"
	case CompletedZero:
		return "completed with exit 0"
	case CompletedNonZero:
		return "completed with a non-zero exit"
	case ExecutedTwice:
		return "executed twice (two start and two complete markers)"
	}
	return string(s)
}

// Check reports whether t, the truth the engine established after producing
// s, is s. A non-nil error says how it differs; the rig then did not produce
// the scenario, and the probe must not be scored against it.
func (s Scenario) Check(t Truth) error {
	if !t.Agree() {
		return fmt.Errorf("the ledger and the server's process events disagree (%s)", t.Disagreement)
	}
	exit := func(want func(int) bool) bool { return t.ExitCode != nil && want(*t.ExitCode) }
	var ok bool
	switch s {
	case NeverStarted:
		ok = t.State == NotStarted && t.Starts == 0
	case StartedKilled:
		ok = t.State == Started && t.Starts == 1 && t.Completes == 0
	case StillRunning:
		ok = t.State == Running && t.Starts == 1 && t.Completes == 0
	case CompletedZero:
		ok = t.State == Completed && t.Starts == 1 && t.Completes == 1 && exit(func(c int) bool { return c == 0 })
	case CompletedNonZero:
		ok = t.State == Completed && t.Starts == 1 && t.Completes == 1 && exit(func(c int) bool { return c != 0 })
	case ExecutedTwice:
		ok = t.State == Completed && t.Starts == 2 && t.Completes == 2
	default:
		return fmt.Errorf("unknown scenario %q", s)
	}
	if ok {
		return nil
	}
	return fmt.Errorf("wanted %s, but the truth is %s (%d start and %d complete markers)", s.Describe(), t, t.Starts, t.Completes)
}

// Mark grades one probe run.
type Mark string

const (
	Correct      Mark = "correct"
	Weak         Mark = "weak"      // the probe said unknown
	Wrong        Mark = "wrong"     // another answer than the right one
	NoAnswer     Mark = "no_answer" // hang, crash or malformed output
	Inconclusive Mark = "inconclusive"
)

// Grade grades answer a (nil: the probe gave none) for scenario s.
func Grade(s Scenario, a *Answer) Mark {
	switch {
	case a == nil:
		return NoAnswer
	case a.State == s.Want():
		return Correct
	case a.State == AnswerUnknown:
		return Weak
	}
	return Wrong
}

// NoAnswerColumn is the matrix column of probe runs without an answer.
const NoAnswerColumn = "no_answer"

// Matrix is the confusion matrix: rows are the scenarios (the truth),
// columns the answers plus NoAnswerColumn.
type Matrix struct {
	Rows    []Scenario `json:"rows"`
	Columns []string   `json:"columns"`
	// Counts[i][j] is how many probe runs in scenario Rows[i] answered Columns[j].
	Counts [][]int `json:"counts"`
}

// NewMatrix returns an empty matrix over every scenario and answer.
func NewMatrix() *Matrix {
	m := &Matrix{Rows: Scenarios()}
	for _, a := range AnswerStates() {
		m.Columns = append(m.Columns, string(a))
	}
	m.Columns = append(m.Columns, NoAnswerColumn)
	m.Counts = make([][]int, len(m.Rows))
	for i := range m.Counts {
		m.Counts[i] = make([]int, len(m.Columns))
	}
	return m
}

// Add counts answer a (nil: none) in scenario s.
func (m *Matrix) Add(s Scenario, a *Answer) {
	col := NoAnswerColumn
	if a != nil {
		col = string(a.State)
	}
	for i, r := range m.Rows {
		if r != s {
			continue
		}
		for j, c := range m.Columns {
			if c == col {
				m.Counts[i][j]++
			}
		}
	}
}

// Cell is one non-empty cell of the matrix off the right answer.
type Cell struct {
	Truth  Scenario `json:"truth"`
	Answer string   `json:"answer"` // an AnswerState or NoAnswerColumn
	Count  int      `json:"count"`
	Text   string   `json:"text"` // "truth started-and-killed, probe said completed"
}

// WrongCells names every cell counting wrong answers or no answer.
func (m *Matrix) WrongCells() []Cell { return m.cells(false) }

// WeakCells names every cell counting "unknown" answers.
func (m *Matrix) WeakCells() []Cell { return m.cells(true) }

func (m *Matrix) cells(weak bool) []Cell {
	out := []Cell{}
	for i, r := range m.Rows {
		for j, c := range m.Columns {
			n := m.Counts[i][j]
			if n == 0 || c == string(r.Want()) || (c == string(AnswerUnknown)) != weak {
				continue
			}
			text := fmt.Sprintf("truth %s, probe said %s", r, c)
			switch {
			case c == NoAnswerColumn:
				text = fmt.Sprintf("truth %s, probe gave no answer", r)
			case weak:
				text += " (weak)"
			}
			if n > 1 {
				text += fmt.Sprintf(" (%d times)", n)
			}
			out = append(out, Cell{Truth: r, Answer: c, Count: n, Text: text})
		}
	}
	return out
}

// WriteTable prints the matrix for a terminal: counts, "." for none, and the
// right answer's cell of each row in brackets.
func (m *Matrix) WriteTable(w io.Writer) {
	header := append([]string{"truth \\ answer"}, m.Columns...)
	table := [][]string{header}
	for i, r := range m.Rows {
		line := []string{string(r)}
		for j, c := range m.Columns {
			cell := "."
			if n := m.Counts[i][j]; n > 0 {
				cell = fmt.Sprint(n)
			}
			if c == string(r.Want()) {
				cell = "[" + cell + "]"
			}
			line = append(line, cell)
		}
		table = append(table, line)
	}
	widths := make([]int, len(header))
	for _, line := range table {
		for j, cell := range line {
			widths[j] = max(widths[j], len(cell))
		}
	}
	// The truth column reads left to right, the counts line up on the right.
	for _, line := range table {
		var b strings.Builder
		for j, cell := range line {
			if j == 0 {
				fmt.Fprintf(&b, "%-*s", widths[j], cell)
			} else {
				fmt.Fprintf(&b, "  %*s", widths[j], cell)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}
