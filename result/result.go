package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Category is what a tool claims to know about the outcome of one operation.
// The rig's verdict compares it with what the tool could have known at the
// moment the connection was cut, so each value promises something precise.
type Category string

// The categories, in the order the contract lists them.
const (
	// Succeeded: the remote command ran and reported exit status 0 (ok: true).
	Succeeded Category = "succeeded"
	// ConfirmedFailure: the remote side reported that the work failed
	// (non-zero exit status received).
	ConfirmedFailure Category = "confirmed_failure"
	// OutcomeUnknown: the caller cannot tell whether the remote side did the work.
	OutcomeUnknown Category = "outcome_unknown"
	// LocalFailure: the tool failed before any request that could have an
	// effect left it.
	LocalFailure Category = "local_failure"
	// AuthenticationFailed: the credential was rejected (expired, revoked, wrong).
	AuthenticationFailed Category = "authentication_failed"
	// AuthorizationDenied: authenticated, but not allowed to do this.
	AuthorizationDenied Category = "authorization_denied"
	// RateLimited: the remote side refused for load and said so.
	RateLimited Category = "rate_limited"
	// MalformedResponse: the remote answered, but not in the shape the
	// operation's contract requires.
	MalformedResponse Category = "malformed_response"
)

// categories holds the order and the meanings in one place, so Categories,
// Meaning, ParseCategory and the JSON Schema (checked by a test) cannot drift.
var categories = []struct {
	c       Category
	meaning string
}{
	{Succeeded, "the remote command ran and reported exit status 0 (ok: true)"},
	{ConfirmedFailure, "the remote side reported that the work failed (non-zero exit status received)"},
	{OutcomeUnknown, "the caller cannot tell whether the remote side did the work"},
	{LocalFailure, "the tool failed before any request that could have an effect left it"},
	{AuthenticationFailed, "the credential was rejected (expired, revoked, wrong)"},
	{AuthorizationDenied, "authenticated, but not allowed to do this"},
	{RateLimited, "the remote side refused for load and said so"},
	{MalformedResponse, "the remote answered, but not in the shape the operation's contract requires"},
}

// Categories returns every category in contract order. The slice is new on
// each call, so callers may modify it.
func Categories() []Category {
	out := make([]Category, len(categories))
	for i, d := range categories {
		out[i] = d.c
	}
	return out
}

// Meaning returns the contract's one-line meaning of c, or "" when c is not
// a category of the contract.
func (c Category) Meaning() string {
	for _, d := range categories {
		if d.c == c {
			return d.meaning
		}
	}
	return ""
}

func (c Category) valid() bool { return c.Meaning() != "" }

// ParseCategory returns the category named s. Matching is exact (case
// included) because the JSON value must be exact too. The error is a
// *ParseError wrapping ErrUnknownCategory that lists the valid names.
func ParseCategory(s string) (Category, error) {
	c := Category(s)
	if !c.valid() {
		return "", unknownCategory(s, -1)
	}
	return c, nil
}

func unknownCategory(s string, off int64) *ParseError {
	return &ParseError{Field: "category", Offset: off, Err: ErrUnknownCategory,
		Detail: fmt.Sprintf("%q (valid: %s)", s, join(Categories()))}
}

// Retry is what the tool tells its caller (a person, an agent, a scheduler)
// to do next. It is separate from Category because the same category can
// call for different next steps, and the rig judges both.
type Retry string

// The retry instructions, in the order the contract lists them.
const (
	// Bounded: may retry within a stated limit.
	Bounded Retry = "bounded"
	// AfterDelay: wait as told, then retry if safe.
	AfterDelay Retry = "after_delay"
	// ReconcileFirst: inspect remote state before anything else.
	ReconcileFirst Retry = "reconcile_first"
	// Never: stop; a person or an authorised recovery path takes over.
	Never Retry = "never"
)

var retries = []struct {
	r       Retry
	meaning string
}{
	{Bounded, "may retry within a stated limit"},
	{AfterDelay, "wait as told, then retry if safe"},
	{ReconcileFirst, "inspect remote state before anything else"},
	{Never, "stop; a person or an authorised recovery path takes over"},
}

// Retries returns every retry instruction in contract order. The slice is
// new on each call.
func Retries() []Retry {
	out := make([]Retry, len(retries))
	for i, d := range retries {
		out[i] = d.r
	}
	return out
}

// Meaning returns the contract's one-line meaning of r, or "" when r is not
// a retry instruction of the contract.
func (r Retry) Meaning() string {
	for _, d := range retries {
		if d.r == r {
			return d.meaning
		}
	}
	return ""
}

func (r Retry) valid() bool { return r.Meaning() != "" }

// ParseRetry returns the retry instruction named s (exact match). The error
// is a *ParseError wrapping ErrUnknownRetry that lists the valid names.
func ParseRetry(s string) (Retry, error) {
	r := Retry(s)
	if !r.valid() {
		return "", unknownRetry(s, -1)
	}
	return r, nil
}

func unknownRetry(s string, off int64) *ParseError {
	return &ParseError{Field: "retry", Offset: off, Err: ErrUnknownRetry,
		Detail: fmt.Sprintf("%q (valid: %s)", s, join(Retries()))}
}

func join[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// Result is the one JSON object a tool prints on stdout after an operation.
// The field set is deliberately small: every field is something the rig
// judges, and anything else would invite tools to hide the truth in prose.
type Result struct {
	// OK is true exactly when Category is Succeeded. It is redundant on
	// purpose: a caller that reads only "ok" must not be misled.
	OK bool `json:"ok"`
	// Category is what the tool knows about the outcome.
	Category Category `json:"category"`
	// Operation names what was attempted (e.g. "restart_service").
	Operation string `json:"operation"`
	// Retry is what the caller should do next.
	Retry Retry `json:"retry"`
	// CorrelationID is the id the rig (or the caller) handed the tool; it
	// ties the result to the remote markers and the event log.
	CorrelationID string `json:"correlation_id"`
	// OperationID, optional, is the operation id the tool sent the command
	// under (markers.OperationIDEnv): the same each time it sent that
	// operation's command, so that the remote side ran the work at most
	// once. 1 to 128 of [A-Za-z0-9._:-], the first a letter or digit.
	OperationID string `json:"operation_id,omitempty"`
	// Message is optional prose for people; nothing may depend on it.
	Message string `json:"message,omitempty"`
	// Hosts, for an operation the tool ran on several hosts at once (a fleet:
	// the rig's SSHRIG_HOSTS), is what the tool knows of each host, one entry
	// per host it was given. The top-level fields then sum the whole operation
	// up; a caller that acts per host reads Hosts. Nil for one host.
	Hosts []HostResult `json:"hosts,omitempty"`
}

// HostResult is what a tool knows of one host of a fleet operation.
type HostResult struct {
	Host     string   `json:"host"` // the host as the tool was given it, e.g. "127.0.0.1:40022"
	OK       bool     `json:"ok"`   // true exactly when Category is Succeeded
	Category Category `json:"category"`
	Retry    Retry    `json:"retry"`
	Message  string   `json:"message,omitempty"`
}

// ContractVersion is the version of the result contract this package
// implements, and docs/result.schema.json describes (its "$comment"). A new
// version only adds: every result valid under an earlier version stays
// valid. The JSON object itself carries no version.
//
//   - Version 1: ok, category, operation, retry, correlation_id and the
//     optional message.
//   - Version 2 adds the optional hosts array (Result.Hosts, HostResult) for
//     an operation run on several hosts at once.
//   - Version 3 adds the optional operation_id (Result.OperationID): the id
//     under which the tool sent, and may have sent again, the command.
const ContractVersion = 3

// Host returns the entry of Hosts for the host named name, compared exactly
// (as Parse compares hosts when it rejects duplicates), and whether there is
// one. A one-host result (Hosts nil) has no entries: its top-level fields
// are that host's result.
func (r Result) Host(name string) (HostResult, bool) {
	for _, h := range r.Hosts {
		if h.Host == name {
			return h, true
		}
	}
	return HostResult{}, false
}

// Validate applies Parse's semantic checks to a Result built in Go: known
// category and retry, non-empty operation and correlation_id, and ok that
// agrees with the category; for a fleet result also, in each entry of
// Hosts, a non-empty host that no earlier entry has, known category and
// retry, and ok that agrees with the category. Hosts may be nil but not
// empty (ErrEmptyValue): a fleet result lists its hosts. A zero Category or
// Retry, at the top level or in an entry, is reported as a missing field
// (ErrMissingField), because in Go that is what it means: nobody set it.
//
// The checks run in Parse's order (see Parse), so a Result and its JSON
// encoding get the same first problem. The error is a *ParseError with
// Offset -1; in an entry its Field reads like "hosts[2].category".
func (r Result) Validate() error {
	if err := r.check(nil); err != nil {
		return err
	}
	if r.Hosts != nil && len(r.Hosts) == 0 {
		return emptyHosts(-1)
	}
	seen := make(map[string]firstHost, len(r.Hosts))
	for i, h := range r.Hosts {
		if err := h.check(i, nil, seen); err != nil {
			return err
		}
	}
	return nil
}

// check holds the value and consistency checks shared by Parse and Validate,
// in contract field order, so both report the same first problem.
// offsets is nil for a Result built in Go; for a parsed one it maps each
// field to the offset of its value, and means every field was present.
// It checks the top level only; Hosts is checked after it, entry by entry.
func (r Result) check(offsets map[string]int64) *ParseError {
	off := func(field string) int64 {
		if o, ok := offsets[field]; ok {
			return o
		}
		return -1
	}
	if offsets == nil {
		// In Go the zero value is the only way a field can be "missing".
		if r.Category == "" {
			return &ParseError{Field: "category", Offset: -1, Err: ErrMissingField,
				Detail: fmt.Sprintf(`"category" is not set (want one of: %s)`, join(Categories()))}
		}
		if r.Retry == "" {
			return &ParseError{Field: "retry", Offset: -1, Err: ErrMissingField,
				Detail: fmt.Sprintf(`"retry" is not set (want one of: %s)`, join(Retries()))}
		}
	}
	if !r.Category.valid() {
		return unknownCategory(string(r.Category), off("category"))
	}
	if r.Operation == "" {
		return emptyValue("operation", off("operation"))
	}
	if !r.Retry.valid() {
		return unknownRetry(string(r.Retry), off("retry"))
	}
	if r.CorrelationID == "" {
		return emptyValue("correlation_id", off("correlation_id"))
	}
	// In Go the empty string is "not set"; in JSON a present field must hold
	// an id.
	if _, present := offsets["operation_id"]; present || r.OperationID != "" {
		if problem := operationIDProblem(r.OperationID); problem != "" {
			return &ParseError{Field: "operation_id", Offset: off("operation_id"), Err: ErrInvalidOperationID,
				Detail: fmt.Sprintf("%q %s; an operation id is 1 to %d of A-Z a-z 0-9 . _ : -, the first a letter or digit", r.OperationID, problem, maxOperationIDLen)}
		}
	}
	if r.OK != (r.Category == Succeeded) {
		return okContradicts("ok", r.OK, r.Category, off("ok"))
	}
	return nil
}

// firstHost records where a host was first seen, to name both entries when
// it appears again.
type firstHost struct {
	index int
	off   int64 // offset of its host value, or -1
}

// check is HostResult's share of Result.check: the value and consistency
// checks of entry i of Hosts, in contract field order (host, category,
// retry, then ok against category). offsets is nil for an entry built in
// Go, where a zero Category or Retry counts as missing; for a parsed entry
// it maps each field to the offset of its value. seen holds the hosts of the
// entries before i and gets this entry's host.
func (h HostResult) check(i int, offsets map[string]int64, seen map[string]firstHost) *ParseError {
	path := fmt.Sprintf("hosts[%d]", i)
	off := func(field string) int64 {
		if o, ok := offsets[field]; ok {
			return o
		}
		return -1
	}
	if offsets == nil {
		if h.Category == "" {
			return &ParseError{Field: path + ".category", Offset: -1, Err: ErrMissingField,
				Detail: fmt.Sprintf(`"%s.category" is not set (want one of: %s)`, path, join(Categories()))}
		}
		if h.Retry == "" {
			return &ParseError{Field: path + ".retry", Offset: -1, Err: ErrMissingField,
				Detail: fmt.Sprintf(`"%s.retry" is not set (want one of: %s)`, path, join(Retries()))}
		}
	}
	if h.Host == "" {
		return emptyValue(path+".host", off("host"))
	}
	if first, dup := seen[h.Host]; dup {
		at := ""
		if first.off >= 0 {
			at = fmt.Sprintf(" (at offset %d)", first.off)
		}
		return &ParseError{Field: path + ".host", Offset: off("host"), Err: ErrDuplicateHost,
			Detail: fmt.Sprintf("host %q is both hosts[%d]%s and hosts[%d]; list each host once",
				h.Host, first.index, at, i)}
	}
	seen[h.Host] = firstHost{index: i, off: off("host")}
	if !h.Category.valid() {
		e := unknownCategory(string(h.Category), off("category"))
		e.Field = path + ".category"
		return e
	}
	if !h.Retry.valid() {
		e := unknownRetry(string(h.Retry), off("retry"))
		e.Field = path + ".retry"
		return e
	}
	if h.OK != (h.Category == Succeeded) {
		return okContradicts(path+".ok", h.OK, h.Category, off("ok"))
	}
	return nil
}

func okContradicts(field string, ok bool, c Category, off int64) *ParseError {
	want := "false"
	if c == Succeeded {
		want = "true"
	}
	return &ParseError{Field: field, Offset: off, Err: ErrOKContradicts,
		Detail: fmt.Sprintf(`%s is %t but category is %q (ok must be %s: it is true exactly when category is %q)`,
			field, ok, c, want, Succeeded)}
}

// maxOperationIDLen is the longest operation id, as markers.MaxIDLen (this
// package imports nothing of the rig's, so that tools can import it alone;
// a test holds the two together).
const maxOperationIDLen = 128

// operationIDProblem says what keeps s from being an operation id, or "".
func operationIDProblem(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > maxOperationIDLen:
		return fmt.Sprintf("is %d bytes long", len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || (c != '.' && c != '_' && c != ':' && c != '-')) {
			return fmt.Sprintf("has %q at byte %d", c, i)
		}
	}
	return ""
}

func emptyHosts(off int64) *ParseError {
	return &ParseError{Field: "hosts", Offset: off, Err: ErrEmptyValue,
		Detail: `field "hosts" is an empty array; list every host of a fleet operation, or omit it for one host`}
}

func emptyValue(field string, off int64) *ParseError {
	return &ParseError{Field: field, Offset: off, Err: ErrEmptyValue,
		Detail: fmt.Sprintf("field %q is the empty string; it must name something", field)}
}

// Marshal validates r and returns it as one line of JSON without a trailing
// newline, the form a tool prints on stdout. HTML characters are not escaped
// (the output is for terminals and parsers, not web pages). Marshal refuses a
// result whose encoding Parse would refuse as too large, so whatever Marshal
// produces, Parse accepts.
func (r Result) Marshal() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		// Unreachable for these structs of strings and bools; kept so
		// a future field cannot fail silently.
		return nil, fmt.Errorf("result: encode: %w", err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > MaxSize {
		return nil, tooLarge(len(out))
	}
	return out, nil
}
