package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("eventlog: writer is closed")

// Writer appends entries to one log. It is safe for concurrent use: appends
// are serialized, so the rig, the server and the tool adapter can log from
// their own goroutines and still produce one chain.
type Writer struct {
	mu     sync.Mutex
	out    io.Writer
	file   *os.File // set by Create: Close syncs and closes it
	redact func([]byte) []byte
	seq    int64
	head   [32]byte // hash of the last line; zero (= Genesis) when empty
	buf    []byte
	err    error // sticky: after a failed write the file's tail is unknown
	closed bool
}

// Create creates a new log file at path. It fails if the file exists: a log
// is never appended to across runs, because a second chain after the first
// would not verify.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	w := NewWriter(f)
	w.file = f
	return w, nil
}

// NewWriter starts a log on w, which must be empty (the first line carries
// Genesis). Close does not close w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{out: w}
}

// SetRedactor sets a function applied to every line (without its newline)
// before it is hashed and written, so secrets the caller recognises never
// reach the file and the chain covers what is actually stored. It may modify
// and return its argument but must not keep it. Its output must still be a
// well-formed line with the same seq and prev; otherwise Append fails and
// writes nothing. nil removes the redactor.
func (w *Writer) SetRedactor(f func([]byte) []byte) {
	w.mu.Lock()
	w.redact = f
	w.mu.Unlock()
}

// Append writes e as the next line and returns what was written: e with Seq,
// Prev and Time filled (Time is set to now when zero and always converted to
// UTC). When a redactor changed the line, the returned Entry is decoded from
// the written bytes instead (Data numbers as json.Number). On error nothing
// is written and the seq is not used.
func (w *Writer) Append(e Entry) (Entry, error) {
	if !validSource(e.Source) {
		return Entry{}, fmt.Errorf("eventlog: source %q is not rig, server or tool", e.Source)
	}
	if !validEvent(e.Event) {
		return Entry{}, fmt.Errorf("eventlog: event %q does not match [a-z0-9_]+", e.Event)
	}
	// Encode the optional fields before taking the lock: they are the
	// expensive part, and other goroutines may be logging meanwhile.
	caseJ, corrJ, dataJ, err := encodeOptional(e)
	if err != nil {
		return Entry{}, err
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return Entry{}, ErrClosed
	}
	if w.err != nil {
		return Entry{}, w.err
	}
	// Time is taken under the lock so that automatic times never go
	// backwards along the chain.
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return Entry{}, fmt.Errorf("eventlog: time %v is outside years 0000-9999", e.Time)
	}
	seq := w.seq + 1
	line := appendLine(w.buf[:0], seq, &w.head, e.Time, e.Source, e.Event, caseJ, corrJ, dataJ)
	w.buf = line[:0]

	line, e, redacted, err := w.redactLocked(line, seq, e)
	if err != nil {
		return Entry{}, err
	}
	if len(line) > MaxLineSize {
		return Entry{}, fmt.Errorf("eventlog: line of %d bytes exceeds %d", len(line), MaxLineSize)
	}
	sum := sha256.Sum256(line)
	line = append(line, '\n')
	// One Write per line: on a file a crash leaves whole lines plus at
	// most one partial last line, which Verify reports as truncated.
	if _, err := w.out.Write(line); err != nil {
		w.err = fmt.Errorf("eventlog: write line %d: %w", seq, err)
		return Entry{}, w.err
	}
	if !redacted {
		e.Seq = seq
		e.Prev = hex.EncodeToString(w.head[:])
	}
	w.seq = seq
	w.head = sum
	return e, nil
}

// encodeOptional encodes e's optional fields as JSON, nil when absent.
func encodeOptional(e Entry) (caseJ, corrJ, dataJ []byte, err error) {
	if e.Case != "" {
		if caseJ, err = json.Marshal(e.Case); err != nil {
			return nil, nil, nil, fmt.Errorf("eventlog: case: %w", err)
		}
	}
	if e.CorrelationID != "" {
		if corrJ, err = json.Marshal(e.CorrelationID); err != nil {
			return nil, nil, nil, fmt.Errorf("eventlog: correlation_id: %w", err)
		}
	}
	if len(e.Data) > 0 {
		if dataJ, err = json.Marshal(e.Data); err != nil {
			return nil, nil, nil, fmt.Errorf("eventlog: data: %w", err)
		}
	}
	return caseJ, corrJ, dataJ, nil
}

// redactLocked applies the redactor, if any, to line number seq built from
// e. When it changed the line, it returns the checked line in w.buf, the
// Entry decoded from it and redacted true; otherwise line and e unchanged.
func (w *Writer) redactLocked(line []byte, seq int64, e Entry) ([]byte, Entry, bool, error) {
	if w.redact == nil {
		return line, e, false, nil
	}
	orig := bytes.Clone(line)
	line = w.redact(line)
	if bytes.Equal(orig, line) {
		return line, e, false, nil
	}
	// The redactor is caller code: check its output with the verifier's
	// own parser so the writer never writes a line Verify would reject.
	if bytes.IndexByte(line, '\n') >= 0 {
		return nil, Entry{}, false, errors.New("eventlog: redactor put a newline in the line")
	}
	p, err := parseLine(line)
	if err != nil {
		return nil, Entry{}, false, fmt.Errorf("eventlog: redacted line is malformed: %w", err)
	}
	if p.seq != seq || p.prev != w.head {
		return nil, Entry{}, false, errors.New("eventlog: redactor changed seq or prev")
	}
	if e, err = p.entry(); err != nil {
		return nil, Entry{}, false, fmt.Errorf("eventlog: redacted line: %w", err)
	}
	// Own the bytes: appending the newline must not write into memory the
	// redactor may still hold.
	line = append(w.buf[:0], line...)
	w.buf = line[:0]
	return line, e, true, nil
}

// Head returns the seq and hash of the last line written, or (0, Genesis)
// before the first. The hash is always the prev of the next line; the rig
// records it in report.json (ideally with the seq, see FormatHead) so that
// Verify can tell a cut tail from an intact log.
func (w *Writer) Head() (seq int64, hash string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq, hex.EncodeToString(w.head[:])
}

// Close stops the writer. For a file from Create it syncs and closes the
// file, so the head the rig records describes bytes that are on disk. Closing
// again returns nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.file == nil {
		return nil
	}
	err := w.file.Sync()
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("eventlog: close: %w", err)
	}
	return nil
}

// FormatHead formats an expected head as "seq:hash", the form Verify
// understands best: with the seq it can tell an altered last line from a cut
// tail and count the missing lines. A bare hash is accepted too.
func FormatHead(seq int64, hash string) string {
	return fmt.Sprintf("%d:%s", seq, hash)
}
