package markers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is the event a ledger line records.
type Kind int

const (
	// Start is written before the work runs.
	Start Kind = iota + 1
	// Complete is written after the work ended, with its exit code.
	Complete
	// Dedup is written instead of Start by a run given an operation id
	// whose work an earlier run already started: this run did not run it.
	Dedup
)

func (k Kind) String() string {
	switch k {
	case Start:
		return "start"
	case Complete:
		return "complete"
	case Dedup:
		return "dedup"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Limits of the ledger grammar (see the package documentation).
const (
	// MaxLineLen is the longest ledger line, in bytes without its newline,
	// that the parser considers. A real marker line is well under 200 bytes;
	// the limit keeps a garbage file from costing memory.
	MaxLineLen = 4096
	// maxQuotedText is how much of a malformed line is kept for a
	// line too long to be kept whole, and shown in LineError.Error.
	maxQuotedText = 80
	maxSeconds    = 253402300799 // 9999-12-31T23:59:59Z; keeps time.Unix far from overflow
	maxPID        = 1<<31 - 1    // pid_t is 32 bits on every POSIX system
	maxExitCode   = 255
)

// NoClock is what a marker has in place of its seconds when the shell that
// wrote it has no clock of its own (no EPOCHSECONDS, as in dash): the
// wrapper does not start a process to learn the time.
const NoClock = "-"

// Entry is one well-formed ledger line.
type Entry struct {
	Line     int // 1-based line number in the ledger
	ID       string
	Kind     Kind
	ExitCode int // of the work; only for Complete, 0 for Start
	// Time is when the marker was written, in UTC, to the second; the zero
	// Time when the marker has NoClock in its place.
	Time time.Time
	PID  int // of the shell that ran the wrapper script
	// OperationID is the operation id the run was given (OperationIDEnv):
	// always set for Dedup, optional for Start, never for Complete.
	OperationID string
}

// operationField is how a marker carries its operation id: one more field,
// last, so that readers of the older grammar (awk's $4 is the pid) read a
// start marker as they always did.
const operationField = "op="

// String returns the entry as the ledger line the wrapper writes, without
// the newline. For an entry produced by Parse it is exactly the line read.
func (e Entry) String() string {
	if e.Kind == Complete {
		return fmt.Sprintf("%s complete %d %s %d", e.ID, e.ExitCode, e.seconds(), e.PID)
	}
	line := fmt.Sprintf("%s %s %s %d", e.ID, e.Kind, e.seconds(), e.PID)
	if e.OperationID != "" {
		line += " " + operationField + e.OperationID
	}
	return line
}

func (e Entry) seconds() string {
	if e.Time.IsZero() {
		return NoClock
	}
	return strconv.FormatInt(e.Time.Unix(), 10)
}

// LineError describes a ledger line that is not a well-formed marker.
type LineError struct {
	Line   int    // 1-based line number in the ledger
	Text   string // the line without its newline; only its first 80 bytes if it is longer than MaxLineLen
	Reason string // what is wrong with it
}

func (e LineError) Error() string {
	return fmt.Sprintf("ledger line %d: %s: %s", e.Line, e.Reason, quoteForMessage(e.Text))
}

// Ledger is a parsed ledger: its well-formed lines and its malformed ones,
// each in file order.
type Ledger struct {
	Entries   []Entry
	Malformed []LineError
}

// Parse reads a ledger. Malformed lines never stop it: each is recorded in
// Malformed with its line number and the reason, so a torn last line (a
// write cut short) or garbage in the middle still lets every good line be
// read. The error is only for a failure to read r; the ledger read up to
// that point is returned with it.
func Parse(r io.Reader) (*Ledger, error) {
	// Room for a longest acceptable line and its newline, so ReadSlice
	// reports bufio.ErrBufferFull exactly for lines that are too long.
	br := bufio.NewReaderSize(r, MaxLineLen+1)
	ledger := &Ledger{}
	for lineNo := 1; ; lineNo++ {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) == 0 && err != nil || isReadFailure(err) {
			// A line cut short by a read failure is not what the file
			// holds; leave it out rather than report it as malformed.
			return ledger, readError(err)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// Keep a prefix for the report and skip the rest of the line
			// without holding it in memory.
			text := string(chunk[:maxQuotedText])
			length := len(chunk)
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = br.ReadSlice('\n')
				length += len(chunk)
			}
			if isReadFailure(err) {
				return ledger, readError(err)
			}
			if bytes.HasSuffix(chunk, []byte("\n")) {
				length--
			}
			ledger.Malformed = append(ledger.Malformed, LineError{
				Line:   lineNo,
				Text:   text,
				Reason: fmt.Sprintf("line is %d bytes, longer than %d", length, MaxLineLen),
			})
		} else {
			ledger.add(lineNo, string(bytes.TrimSuffix(chunk, []byte("\n"))))
		}
		if err != nil {
			return ledger, readError(err)
		}
	}
}

// isReadFailure reports whether err from ReadSlice is a real failure to
// read, as opposed to the end of the input or a line longer than the buffer.
func isReadFailure(err error) bool {
	return err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull)
}

func readError(err error) error {
	if err == io.EOF {
		return nil
	}
	return fmt.Errorf("markers: reading ledger: %w", err)
}

// ParseBytes parses a ledger held in memory; see [Parse].
func ParseBytes(b []byte) *Ledger {
	ledger, _ := Parse(bytes.NewReader(b)) // a bytes.Reader fails only with io.EOF
	return ledger
}

func (l *Ledger) add(lineNo int, line string) {
	entry, reason := parseLine(line)
	if reason != "" {
		l.Malformed = append(l.Malformed, LineError{Line: lineNo, Text: line, Reason: reason})
		return
	}
	entry.Line = lineNo
	l.Entries = append(l.Entries, entry)
}

// parseLine parses one line without its newline. It returns a non-empty
// reason if the line is malformed.
func parseLine(line string) (Entry, string) {
	switch {
	case line == "":
		return Entry{}, "empty line"
	case strings.HasSuffix(line, "\r"):
		return Entry{}, "carriage return at end of line (CRLF line ending?)"
	case strings.HasPrefix(line, " "):
		return Entry{}, "leading space"
	case strings.HasSuffix(line, " "):
		return Entry{}, "trailing space"
	}
	if i := strings.Index(line, "  "); i >= 0 {
		return Entry{}, fmt.Sprintf("two spaces at byte %d (fields are separated by single spaces)", i)
	}
	fields := strings.Split(line, " ")
	if len(fields) < 2 {
		return Entry{}, fmt.Sprintf("want at least 2 fields (id and event), got %d", len(fields))
	}
	var entry Entry
	// hasOp: the line's last field is its operation id; want: how many
	// fields its event takes.
	var hasOp bool
	var want string
	switch fields[1] {
	case "start":
		entry.Kind, want, hasOp = Start, "4 or 5", len(fields) == 5
		if len(fields) != 4 && len(fields) != 5 {
			return Entry{}, fmt.Sprintf("want %s fields for %s, got %d", want, entry.Kind, len(fields))
		}
	case "complete", "dedup":
		entry.Kind, want = Complete, "5"
		if fields[1] == "dedup" {
			entry.Kind, hasOp = Dedup, true
		}
		if len(fields) != 5 {
			return Entry{}, fmt.Sprintf("want %s fields for %s, got %d", want, entry.Kind, len(fields))
		}
	default:
		return Entry{}, fmt.Sprintf("unknown event %s (want start, complete or dedup)", quoteForMessage(fields[1]))
	}
	if problem := idProblem(fields[0]); problem != "" {
		return Entry{}, "invalid id: " + problem
	}
	entry.ID = fields[0]
	numbers := fields[2:]
	if hasOp {
		op, ok := strings.CutPrefix(fields[4], operationField)
		if !ok {
			return Entry{}, fmt.Sprintf("field 5 of %s is %s, want %s and an operation id", entry.Kind, quoteForMessage(fields[4]), operationField)
		}
		if problem := idProblem(op); problem != "" {
			return Entry{}, "invalid operation id: " + problem
		}
		entry.OperationID = op
		numbers = numbers[:2] // seconds and pid
	}
	if entry.Kind == Complete {
		code, problem := parseDecimal("exit code", numbers[0], 0, maxExitCode)
		if problem != "" {
			return Entry{}, problem
		}
		entry.ExitCode = int(code)
		numbers = numbers[1:]
	}
	if numbers[0] != NoClock {
		seconds, problem := parseDecimal("unix seconds", numbers[0], 0, maxSeconds)
		if problem != "" {
			return Entry{}, problem
		}
		entry.Time = time.Unix(seconds, 0).UTC()
	}
	pid, problem := parseDecimal("pid", numbers[1], 1, maxPID)
	if problem != "" {
		return Entry{}, problem
	}
	entry.PID = int(pid)
	return entry, ""
}

// parseDecimal parses s as a number in min..max written the way the wrapper
// writes numbers: decimal digits only, no sign, no leading zero. That keeps
// the grammar canonical (one line per entry), so anything else is corruption.
func parseDecimal(what, s string, min, max int64) (int64, string) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Sprintf("%s %s is not a decimal number", what, quoteForMessage(s))
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Sprintf("%s %s has a leading zero", what, quoteForMessage(s))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < min || n > max {
		// err can only be a range error here: s is all digits and not empty.
		return 0, fmt.Sprintf("%s %s out of range %d..%d", what, shorten(s), min, max)
	}
	return n, ""
}

// shorten cuts a long string of digits for a message.
func shorten(s string) string {
	if len(s) <= maxQuotedText {
		return s
	}
	return s[:maxQuotedText] + "..."
}

// Summary condenses what the ledger says about one id.
type Summary struct {
	ID        string
	Starts    int // more than one means the command ran more than once
	Completes int
	// Dedups counts runs that were given the operation id of work already
	// started and did not run it.
	Dedups int
	// ExitCode is the exit code of the last complete marker, nil if there
	// is none.
	ExitCode *int
	// The markers' times; zero where a marker has NoClock.
	FirstStart   time.Time
	LastStart    time.Time
	LastComplete time.Time
	// PIDs are the distinct pids of the id's markers in order of first
	// appearance; one per run of the wrapper.
	PIDs []int
}

// Summary returns what the ledger says about id. An id that never appears
// has zero counts, a nil ExitCode and zero times.
func (l *Ledger) Summary(id string) Summary {
	s := Summary{ID: id}
	for _, e := range l.Entries {
		if e.ID == id {
			s.add(e)
		}
	}
	return s
}

func (s *Summary) add(e Entry) {
	switch e.Kind {
	case Start:
		if s.Starts == 0 {
			s.FirstStart = e.Time
		}
		s.Starts++
		s.LastStart = e.Time
	case Complete:
		s.Completes++
		code := e.ExitCode
		s.ExitCode = &code
		s.LastComplete = e.Time
	case Dedup:
		s.Dedups++
	}
	if !slices.Contains(s.PIDs, e.PID) {
		s.PIDs = append(s.PIDs, e.PID)
	}
}

// Lines are id's entries as ledger lines, in file order; none for a nil
// ledger. Transcripts quote them.
func (l *Ledger) Lines(id string) []string {
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

// Summaries returns the summary of every id in the ledger.
func (l *Ledger) Summaries() map[string]Summary {
	summaries := make(map[string]*Summary)
	for _, e := range l.Entries {
		s := summaries[e.ID]
		if s == nil {
			s = &Summary{ID: e.ID}
			summaries[e.ID] = s
		}
		s.add(e)
	}
	result := make(map[string]Summary, len(summaries))
	for id, s := range summaries {
		result[id] = *s
	}
	return result
}

// IDs returns the ids of the ledger's entries in order of first appearance.
// Malformed lines do not count: their ids cannot be trusted.
func (l *Ledger) IDs() []string {
	var ids []string
	seen := make(map[string]bool)
	for _, e := range l.Entries {
		if !seen[e.ID] {
			seen[e.ID] = true
			ids = append(ids, e.ID)
		}
	}
	return ids
}
