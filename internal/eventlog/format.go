package eventlog

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// FileName is the event log's name inside a run directory; Problem.Error
// names it so a message can be pasted next to the run.
const FileName = "events.jsonl"

// Genesis is the prev of line 1 and the head of an empty log: 64 zeros. It is
// recognisable at a glance and no line hashes to it in practice, so a prev of
// Genesis anywhere but line 1 is a break, never a coincidence.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// MaxLineSize bounds one line (without its newline). The writer refuses
// longer lines and Verify calls them malformed, so a garbage file cannot make
// Verify hold an unbounded line in memory.
const MaxLineSize = 16 << 20

// Sources: who produced the event.
const (
	SourceRig    = "rig"
	SourceServer = "server"
	SourceTool   = "tool"
)

// Problem kinds, in Problem.Kind.
const (
	KindModified  = "modified"
	KindDeleted   = "deleted"
	KindInserted  = "inserted"
	KindReordered = "reordered"
	KindTruncated = "truncated"
	KindMalformed = "malformed"
	KindBadSeq    = "bad_seq"
)

// timeLayout always writes nine fractional digits so every line of a log has
// the same shape and the parser can insist on it.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// Entry is one event. Seq, Prev and (when zero) Time are filled by
// Writer.Append; Case, CorrelationID and Data are optional.
type Entry struct {
	Seq           int64
	Prev          string
	Time          time.Time
	Source        string
	Event         string
	Case          string
	CorrelationID string
	Data          map[string]any
}

func validSource[T ~string | ~[]byte](s T) bool {
	switch string(s) { // no allocation: the conversion is only compared
	case SourceRig, SourceServer, SourceTool:
		return true
	}
	return false
}

func validEvent[T ~string | ~[]byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// appendLine writes the line in the one order the format allows. caseJSON,
// corrJSON and dataJSON are already-encoded JSON values, nil when absent.
func appendLine(dst []byte, seq int64, prev *[32]byte, t time.Time, source, event string, caseJSON, corrJSON, dataJSON []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"prev":"`...)
	dst = hex.AppendEncode(dst, prev[:])
	dst = append(dst, `","time":"`...)
	dst = t.AppendFormat(dst, timeLayout)
	dst = append(dst, `","source":"`...)
	dst = append(dst, source...) // validated: no escaping needed
	dst = append(dst, `","event":"`...)
	dst = append(dst, event...) // validated: no escaping needed
	dst = append(dst, '"')
	if caseJSON != nil {
		dst = append(dst, `,"case":`...)
		dst = append(dst, caseJSON...)
	}
	if corrJSON != nil {
		dst = append(dst, `,"correlation_id":`...)
		dst = append(dst, corrJSON...)
	}
	if dataJSON != nil {
		dst = append(dst, `,"data":`...)
		dst = append(dst, dataJSON...)
	}
	return append(dst, '}')
}

// parsed is one line taken apart. The optional fields are raw JSON, nil when
// absent: Verify only needs to know they are well-formed.
type parsed struct {
	seq    int64
	prev   [32]byte
	time   time.Time
	source []byte
	event  []byte
	caseJ  []byte
	corrJ  []byte
	dataJ  []byte
}

// parseLine accepts exactly what appendLine produces (plus any redaction
// that keeps it so): fixed key order, no whitespace outside values, no
// unknown or repeated keys. It is a hand scanner rather than encoding/json
// because the order and the absence of extra keys are part of the format, and
// because Verify runs it on every line.
func parseLine(b []byte) (parsed, error) {
	var p parsed
	if len(b) == 0 {
		return p, errors.New("empty line")
	}
	if b[len(b)-1] == '\r' {
		return p, errors.New("line ends with a carriage return (CRLF)")
	}
	rest, err := p.parseChain(b)
	if err != nil {
		return p, err
	}
	if rest, err = p.parseRequired(rest); err != nil {
		return p, err
	}
	if rest, err = p.parseOptional(rest); err != nil {
		return p, err
	}
	if len(rest) != 1 || rest[0] != '}' {
		return p, errors.New("unexpected content after the known fields (unknown key, wrong order or trailing bytes)")
	}
	return p, nil
}

// parseChain reads the line's opening brace, seq and prev into p and
// returns the rest of the line.
func (p *parsed) parseChain(b []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"seq":`))
	if !ok {
		return nil, errors.New(`does not start with its "seq" field`)
	}
	n := 0
	for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	if n == 0 || rest[0] == '0' {
		return nil, errors.New("seq is not a positive integer")
	}
	for _, c := range rest[:n] {
		d := int64(c - '0')
		if p.seq > (math.MaxInt64-d)/10 {
			return nil, errors.New("seq overflows int64")
		}
		p.seq = p.seq*10 + d
	}
	rest = rest[n:]

	if rest, ok = bytes.CutPrefix(rest, []byte(`,"prev":"`)); !ok {
		return nil, errors.New(`"prev" missing or out of place`)
	}
	if len(rest) < 65 || rest[64] != '"' || !isLowerHex(rest[:64]) {
		return nil, errors.New("prev is not 64 lowercase hex digits")
	}
	hex.Decode(p.prev[:], rest[:64])
	return rest[65:], nil
}

// parseRequired reads the time, source and event fields into p and returns
// the rest of the line.
func (p *parsed) parseRequired(rest []byte) ([]byte, error) {
	var v []byte
	var ok bool
	if v, rest, ok = plainString(rest, `,"time":"`); !ok {
		return nil, errors.New(`"time" missing or out of place`)
	}
	t, err := time.Parse(timeLayout, string(v))
	if err != nil {
		return nil, fmt.Errorf("time %q is not UTC RFC 3339 with nine fractional digits", v)
	}
	p.time = t

	if p.source, rest, ok = plainString(rest, `,"source":"`); !ok {
		return nil, errors.New(`"source" missing or out of place`)
	}
	if !validSource(p.source) {
		return nil, fmt.Errorf("source %q is not rig, server or tool", p.source)
	}
	if p.event, rest, ok = plainString(rest, `,"event":"`); !ok {
		return nil, errors.New(`"event" missing or out of place`)
	}
	if !validEvent(p.event) {
		return nil, fmt.Errorf("event %q does not match [a-z0-9_]+", p.event)
	}
	return rest, nil
}

// parseOptional reads whichever of case, correlation_id and data are
// present into p and returns the rest of the line, its closing brace.
func (p *parsed) parseOptional(rest []byte) ([]byte, error) {
	var ok bool
	if r, found := bytes.CutPrefix(rest, []byte(`,"case":`)); found {
		if p.caseJ, rest, ok = jsonString(r); !ok {
			return nil, errors.New("case is not a JSON string")
		}
	}
	if r, found := bytes.CutPrefix(rest, []byte(`,"correlation_id":`)); found {
		if p.corrJ, rest, ok = jsonString(r); !ok {
			return nil, errors.New("correlation_id is not a JSON string")
		}
	}
	if r, found := bytes.CutPrefix(rest, []byte(`,"data":`)); found {
		// data is the last field, so it runs to the byte before the
		// line's closing brace; json.Valid then rejects anything that is
		// not exactly one value, and the braces make it an object.
		if len(r) < 3 || r[len(r)-1] != '}' {
			return nil, errors.New("data is not a JSON object")
		}
		d := r[:len(r)-1]
		if d[0] != '{' || d[len(d)-1] != '}' || !json.Valid(d) {
			return nil, errors.New("data is not a JSON object")
		}
		p.dataJ = d
		rest = r[len(r)-1:]
	}
	return rest, nil
}

// plainString reads key (which ends with the opening quote) and a string
// value with no escapes, up to the closing quote. The values read this way
// (time, source, event) are validated to a charset without quotes or
// backslashes, so the first quote is the closing one.
func plainString(b []byte, key string) (val, rest []byte, ok bool) {
	r, ok := bytes.CutPrefix(b, []byte(key))
	if !ok {
		return nil, nil, false
	}
	i := bytes.IndexByte(r, '"')
	if i < 0 {
		return nil, nil, false
	}
	return r[:i], r[i+1:], true
}

// jsonString reads one JSON string at the start of b, checking it as RFC
// 8259 does: no control characters, only the defined escapes. (Bytes of
// invalid UTF-8 pass, as with encoding/json: the hash covers them anyway.)
func jsonString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return b[:i+1], b[i+1:], true
		case c < 0x20:
			return nil, nil, false
		case c == '\\':
			if i+1 >= len(b) {
				return nil, nil, false
			}
			i++
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex4(b[i+1:i+5]) {
					return nil, nil, false
				}
				i += 4
			default:
				return nil, nil, false
			}
		}
	}
	return nil, nil, false
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// lowerHex marks the bytes allowed in prev: a table, because every line
// checks 64 of them.
var lowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if !lowerHex[c] {
			return false
		}
	}
	return true
}

// entry turns a parsed line back into an Entry. Numbers in Data come back as
// json.Number so no digit is lost.
func (p *parsed) entry() (Entry, error) {
	e := Entry{
		Seq:    p.seq,
		Prev:   hex.EncodeToString(p.prev[:]),
		Time:   p.time,
		Source: string(p.source),
		Event:  string(p.event),
	}
	if p.caseJ != nil {
		if err := json.Unmarshal(p.caseJ, &e.Case); err != nil {
			return Entry{}, err
		}
	}
	if p.corrJ != nil {
		if err := json.Unmarshal(p.corrJ, &e.CorrelationID); err != nil {
			return Entry{}, err
		}
	}
	if p.dataJ != nil {
		dec := json.NewDecoder(bytes.NewReader(p.dataJ))
		dec.UseNumber()
		if err := dec.Decode(&e.Data); err != nil {
			return Entry{}, err
		}
	}
	return e, nil
}
