package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxSize is the largest input Parse accepts, in bytes (1 MiB). A result is a
// few hundred bytes; a tool that prints megabytes on stdout is malformed, and
// treating that as a parse error keeps a misbehaving tool from becoming the
// rig's memory problem. Callers reading a tool's stdout should stop after
// MaxSize+1 bytes (io.LimitReader): that is enough for Parse to say
// ErrTooLarge.
const MaxSize = 1 << 20

// Sentinel errors. Every error from Parse, Validate, Marshal, ParseCategory
// and ParseRetry is a *ParseError that unwraps to exactly one of these, so
// callers branch with errors.Is and people read ParseError.Error.
var (
	ErrTooLarge        = errors.New("result: output too large")
	ErrEmpty           = errors.New("result: empty output (want one JSON object)")
	ErrSyntax          = errors.New("result: invalid JSON")
	ErrNotObject       = errors.New("result: not a JSON object")
	ErrTrailingData    = errors.New("result: trailing data after the JSON object")
	ErrUnknownField    = errors.New("result: unknown field")
	ErrDuplicateField  = errors.New("result: duplicate field")
	ErrMissingField    = errors.New("result: missing required field")
	ErrWrongType       = errors.New("result: wrong type")
	ErrUnknownCategory = errors.New("result: unknown category")
	ErrUnknownRetry    = errors.New("result: unknown retry")
	ErrEmptyValue      = errors.New("result: empty value")
	ErrOKContradicts   = errors.New("result: ok contradicts category")
)

// ParseError reports why a result violates the contract.
type ParseError struct {
	// Field is the JSON name of the field the problem is about, or "" when
	// it is not about one field (syntax, shape, size, trailing data).
	Field string
	// Offset is the zero-based byte index in the input where the problem
	// was found, or -1 when unknown (always -1 from Validate). For a syntax
	// error it is the offending byte, i.e. json.SyntaxError.Offset-1,
	// because encoding/json counts the bytes read including that one; for
	// a field it is the start of the field's value (or key, for unknown
	// and duplicate fields).
	Offset int64
	// Err is one of the sentinel errors (ErrSyntax, ErrUnknownCategory, ...).
	Err error
	// Detail says what was found and, where it helps, what was wanted.
	Detail string
}

// Error returns the sentinel's text, the offset when known, and the detail:
// for example `result: wrong type at offset 6: field "ok" is a string, want boolean`.
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("result: invalid result")
	}
	if e.Offset >= 0 {
		b.WriteString(" at offset ")
		b.WriteString(strconv.FormatInt(e.Offset, 10))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the sentinel, so errors.Is(err, ErrUnknownCategory) works.
func (e *ParseError) Unwrap() error { return e.Err }

func tooLarge(n int) *ParseError {
	return &ParseError{Offset: -1, Err: ErrTooLarge,
		Detail: fmt.Sprintf("%d bytes, the limit is %d (1 MiB)", n, MaxSize)}
}

// fields lists the contract's fields in contract order; required says which
// must be present. The JSON Schema and the struct tags are checked against
// each other by tests, and this list against the struct tags.
var fields = []struct {
	name     string
	required bool
	jsonType string // the JSON type the value must have
}{
	{"ok", true, "boolean"},
	{"category", true, "string"},
	{"operation", true, "string"},
	{"retry", true, "string"},
	{"correlation_id", true, "string"},
	{"message", false, "string"},
}

func fieldNames(requiredOnly bool) string {
	var s []string
	for _, f := range fields {
		if f.required || !requiredOnly {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, ", ")
}

// member is one top-level key/value pair as it appeared in the input.
type member struct {
	key    string // unescaped, as any JSON parser would see it
	keyOff int64
	valOff int64
	raw    json.RawMessage
}

// Parse reads exactly one result object from b (typically a tool's whole
// stdout) and checks it against the contract. Leading and trailing JSON
// whitespace is allowed; anything else around the object is an error.
//
// Parsing is strict because a lenient parser would let a tool pass the rig
// with a result another consumer reads differently: duplicate keys (where
// encoding/json silently keeps the last one), keys differing only in case
// (which encoding/json matches anyway), extra fields, or a second object.
//
// When several problems exist, Parse reports the first found in this order:
// size, emptiness, syntax, shape (not an object, trailing data), unknown and
// duplicate fields (in document order), missing fields, types, values, and
// finally the consistency of ok with category (the last four in contract
// field order). The error is always a *ParseError.
func Parse(b []byte) (Result, error) {
	if len(b) > MaxSize {
		return Result{}, tooLarge(len(b))
	}
	start := skipSpace(b, 0)
	if start == len(b) {
		return Result{}, &ParseError{Offset: -1, Err: ErrEmpty}
	}

	// Pass 1: syntax and shape of the first value, using encoding/json's
	// own scanner so that "valid JSON" means the same here as everywhere.
	dec := json.NewDecoder(bytes.NewReader(b))
	var obj json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return Result{}, syntaxError(err, len(b))
	}
	if b[start] != '{' {
		return Result{}, &ParseError{Offset: int64(start), Err: ErrNotObject,
			Detail: "found " + article(kindOf(b[start:]))}
	}
	end := int(dec.InputOffset())
	if rest := skipSpace(b, end); rest < len(b) {
		return Result{}, &ParseError{Offset: int64(rest), Err: ErrTrailingData}
	}

	// Pass 2: the object's members, in document order, with offsets.
	members, err := splitObject(obj, int64(start))
	if err != nil {
		// obj already passed the scanner; this would be a bug here.
		return Result{}, err
	}

	// Unknown and duplicate fields, whichever comes first in the document.
	seen := make(map[string]member, len(members))
	for _, m := range members {
		if !known(m.key) {
			return Result{}, &ParseError{Field: m.key, Offset: m.keyOff, Err: ErrUnknownField,
				Detail: fmt.Sprintf("%q is not part of the contract (allowed: %s)", m.key, fieldNames(false))}
		}
		if first, dup := seen[m.key]; dup {
			return Result{}, &ParseError{Field: m.key, Offset: m.keyOff, Err: ErrDuplicateField,
				Detail: fmt.Sprintf("%q appears again (first at offset %d); parsers disagree on which one counts",
					m.key, first.keyOff)}
		}
		seen[m.key] = m
	}

	// Missing fields, in contract order.
	for _, f := range fields {
		if _, ok := seen[f.name]; f.required && !ok {
			return Result{}, &ParseError{Field: f.name, Offset: -1, Err: ErrMissingField,
				Detail: fmt.Sprintf("%q (required: %s)", f.name, fieldNames(true))}
		}
	}

	// Types, in contract order.
	offsets := make(map[string]int64, len(seen))
	for _, f := range fields {
		m, ok := seen[f.name]
		if !ok {
			continue
		}
		offsets[f.name] = m.valOff
		if got := kindOf(m.raw); got != f.jsonType {
			return Result{}, &ParseError{Field: f.name, Offset: m.valOff, Err: ErrWrongType,
				Detail: fmt.Sprintf("field %q is %s, want %s", f.name, article(got), f.jsonType)}
		}
	}

	var r Result
	r.OK = bytes.Equal(seen["ok"].raw, []byte("true"))
	r.Category = Category(str(seen["category"].raw))
	r.Operation = str(seen["operation"].raw)
	r.Retry = Retry(str(seen["retry"].raw))
	r.CorrelationID = str(seen["correlation_id"].raw)
	if m, ok := seen["message"]; ok {
		r.Message = str(m.raw)
	}

	// Values, then consistency: shared with Validate.
	if perr := r.check(offsets); perr != nil {
		return Result{}, perr
	}
	return r, nil
}

// syntaxError turns what encoding/json said into a ParseError with a
// zero-based offset.
func syntaxError(err error, n int) *ParseError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := se.Offset - 1
		if off < 0 {
			off = 0
		}
		return &ParseError{Offset: off, Err: ErrSyntax, Detail: se.Error()}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &ParseError{Offset: int64(n), Err: ErrSyntax,
			Detail: "found the end of the input inside the value (truncated output?)"}
	}
	// Decoding into a json.RawMessage from a bytes.Reader fails only with
	// the two errors above; keep the cause visible if that ever changes.
	return &ParseError{Offset: -1, Err: ErrSyntax, Detail: err.Error()}
}

// splitObject returns the members of obj, a syntactically valid JSON object
// that starts at offset base of the original input.
func splitObject(obj []byte, base int64) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // the '{'
		return nil, syntaxError(err, len(obj))
	}
	var members []member
	for dec.More() {
		// Between tokens the decoder's offset sits before any whitespace
		// and comma; skip them to point at the key itself.
		keyOff := skipSpaceComma(obj, int(dec.InputOffset()))
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err, len(obj))
		}
		key, _ := tok.(string)
		valOff := skipSpaceColon(obj, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxError(err, len(obj))
		}
		members = append(members, member{key: key, keyOff: base + int64(keyOff),
			valOff: base + int64(valOff), raw: raw})
	}
	return members, nil
}

func known(name string) bool {
	for _, f := range fields {
		if f.name == name {
			return true
		}
	}
	return false
}

// str decodes a raw JSON string already known to be a string. encoding/json
// replaces invalid UTF-8 with U+FFFD, as the schema validator's parser does.
func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// kindOf names the JSON type of the value starting at v[0] (v is a valid
// JSON value without leading whitespace).
func kindOf(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func article(kind string) string {
	switch kind {
	case "array", "object":
		return "an " + kind
	case "null":
		return "null"
	}
	return "a " + kind
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (space, tab, LF, CR), or len(b).
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func skipSpaceComma(b []byte, i int) int {
	for i < len(b) && (isSpace(b[i]) || b[i] == ',') {
		i++
	}
	return i
}

func skipSpaceColon(b []byte, i int) int {
	for i < len(b) && (isSpace(b[i]) || b[i] == ':') {
		i++
	}
	return i
}
