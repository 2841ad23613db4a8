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
	// ErrInvalidOperationID: operation_id is not 1 to 128 of
	// [A-Za-z0-9._:-] starting with a letter or digit, the ids the remote
	// markers can carry (package markers).
	ErrInvalidOperationID = errors.New("result: invalid operation id")
	// ErrDuplicateHost: two entries of hosts name the same host. JSON
	// Schema cannot express this rule; see the schema's description.
	ErrDuplicateHost = errors.New("result: duplicate host")
)

// ParseError reports why a result violates the contract.
type ParseError struct {
	// Field is the JSON name of the field the problem is about, or "" when
	// it is not about one field (syntax, shape, size, trailing data). In an
	// entry of hosts it is the path with a zero-based index, such as
	// "hosts[2].category", or "hosts[2]" for the entry itself.
	Field string
	// Offset is the zero-based byte index in the input where the problem
	// was found, or -1 when unknown (always -1 from Validate). For a syntax
	// error it is the offending byte, i.e. json.SyntaxError.Offset-1,
	// because encoding/json counts the bytes read including that one; for
	// a field it is the start of the field's value (or key, for unknown
	// and duplicate fields). A missing top-level field has Offset -1; a
	// missing field of an entry of hosts has the offset of that entry.
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

// field is one key of a contract object.
type field struct {
	name     string
	required bool
	jsonType string // the JSON type the value must have
}

// fields lists the contract's fields in contract order; required says which
// must be present. The JSON Schema and the struct tags are checked against
// each other by tests, and this list against the struct tags.
var fields = []field{
	{"ok", true, "boolean"},
	{"category", true, "string"},
	{"operation", true, "string"},
	{"retry", true, "string"},
	{"correlation_id", true, "string"},
	{"operation_id", false, "string"},
	{"message", false, "string"},
	{"hosts", false, "array"},
}

// hostFields is fields for each entry of hosts (HostResult).
var hostFields = []field{
	{"host", true, "string"},
	{"ok", true, "boolean"},
	{"category", true, "string"},
	{"retry", true, "string"},
	{"message", false, "string"},
}

func fieldNames(table []field, requiredOnly bool) string {
	var s []string
	for _, f := range table {
		if f.required || !requiredOnly {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, ", ")
}

// member is one key/value pair of an object as it appeared in the input.
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
// duplicate fields (in document order), missing fields, types (hosts must
// be an array), values, and the consistency of ok with category (the last
// four in contract field order). Then, for a fleet result, hosts: an empty
// array, then each entry in index order, completely before the next, in
// the same order as the top level: not an object, unknown and duplicate
// fields, missing fields, types, values (host: empty, or the host of an
// earlier entry; category; retry), and ok against category. So a fleet
// result's top level is judged exactly as a result without hosts is.
// The error is always a *ParseError.
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

	seen, perr := checkMembers(members, fields, "", "the contract", -1)
	if perr != nil {
		return Result{}, perr
	}
	offsets := valueOffsets(seen)

	var r Result
	r.OK = bytes.Equal(seen["ok"].raw, []byte("true"))
	r.Category = Category(str(seen["category"].raw))
	r.Operation = str(seen["operation"].raw)
	r.Retry = Retry(str(seen["retry"].raw))
	r.CorrelationID = str(seen["correlation_id"].raw)
	if m, ok := seen["operation_id"]; ok {
		r.OperationID = str(m.raw)
	}
	if m, ok := seen["message"]; ok {
		r.Message = str(m.raw)
	}

	// Values, then consistency: shared with Validate.
	if perr := r.check(offsets); perr != nil {
		return Result{}, perr
	}
	if m, ok := seen["hosts"]; ok {
		hosts, perr := parseHosts(m)
		if perr != nil {
			return Result{}, perr
		}
		r.Hosts = hosts
	}
	return r, nil
}

// checkMembers applies the checks on the keys and types of one object:
// unknown and duplicate fields (in document order), then missing fields and
// types (in table order). path prefixes ParseError.Field ("" at the top
// level, "hosts[2]." in an entry), what names the object in the message
// about an unknown field, and missingOff is the Offset of a missing field.
// It returns the members by key.
func checkMembers(members []member, table []field, path, what string, missingOff int64) (map[string]member, *ParseError) {
	seen := make(map[string]member, len(members))
	for _, m := range members {
		if !known(table, m.key) {
			return nil, &ParseError{Field: path + m.key, Offset: m.keyOff, Err: ErrUnknownField,
				Detail: fmt.Sprintf("%q is not part of %s (allowed: %s)", m.key, what, fieldNames(table, false))}
		}
		if first, dup := seen[m.key]; dup {
			return nil, &ParseError{Field: path + m.key, Offset: m.keyOff, Err: ErrDuplicateField,
				Detail: fmt.Sprintf("%q appears again (first at offset %d); parsers disagree on which one counts",
					path+m.key, first.keyOff)}
		}
		seen[m.key] = m
	}

	// Missing fields, in contract order.
	for _, f := range table {
		if _, ok := seen[f.name]; f.required && !ok {
			return nil, &ParseError{Field: path + f.name, Offset: missingOff, Err: ErrMissingField,
				Detail: fmt.Sprintf("%q (required: %s)", path+f.name, fieldNames(table, true))}
		}
	}

	// Types, in contract order.
	for _, f := range table {
		m, ok := seen[f.name]
		if !ok {
			continue
		}
		if got := kindOf(m.raw); got != f.jsonType {
			return nil, &ParseError{Field: path + f.name, Offset: m.valOff, Err: ErrWrongType,
				Detail: fmt.Sprintf("field %q is %s, want %s", path+f.name, article(got), f.jsonType)}
		}
	}
	return seen, nil
}

// valueOffsets maps each member's key to the offset of its value.
func valueOffsets(seen map[string]member) map[string]int64 {
	offsets := make(map[string]int64, len(seen))
	for k, m := range seen {
		offsets[k] = m.valOff
	}
	return offsets
}

// parseHosts reads and checks the value of "hosts", already known to be an
// array, entry by entry in the order Parse documents.
func parseHosts(m member) ([]HostResult, *ParseError) {
	elems, perr := splitArray(m.raw, m.valOff)
	if perr != nil {
		return nil, perr // a bug: m.raw passed the scanner
	}
	if len(elems) == 0 {
		return nil, emptyHosts(m.valOff)
	}
	hosts := make([]HostResult, 0, len(elems))
	seenHosts := make(map[string]firstHost, len(elems))
	for i, e := range elems {
		path := fmt.Sprintf("hosts[%d]", i)
		if got := kindOf(e.raw); got != "object" {
			return nil, &ParseError{Field: path, Offset: e.off, Err: ErrWrongType,
				Detail: fmt.Sprintf("%s is %s, want object", path, article(got))}
		}
		members, err := splitObject(e.raw, e.off)
		if err != nil {
			return nil, err
		}
		seen, perr := checkMembers(members, hostFields, path+".", "a hosts entry", e.off)
		if perr != nil {
			return nil, perr
		}
		h := HostResult{
			Host:     str(seen["host"].raw),
			OK:       bytes.Equal(seen["ok"].raw, []byte("true")),
			Category: Category(str(seen["category"].raw)),
			Retry:    Retry(str(seen["retry"].raw)),
		}
		if mm, ok := seen["message"]; ok {
			h.Message = str(mm.raw)
		}
		if perr := h.check(i, valueOffsets(seen), seenHosts); perr != nil {
			return nil, perr
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
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
func splitObject(obj []byte, base int64) ([]member, *ParseError) {
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

// element is one value of an array as it appeared in the input.
type element struct {
	off int64
	raw json.RawMessage
}

// splitArray returns the elements of arr, a syntactically valid JSON array
// that starts at offset base of the original input.
func splitArray(arr []byte, base int64) ([]element, *ParseError) {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if _, err := dec.Token(); err != nil { // the '['
		return nil, syntaxError(err, len(arr))
	}
	var elems []element
	for dec.More() {
		off := skipSpaceComma(arr, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxError(err, len(arr))
		}
		elems = append(elems, element{off: base + int64(off), raw: raw})
	}
	return elems, nil
}

func known(table []field, name string) bool {
	for _, f := range table {
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
