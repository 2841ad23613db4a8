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
	// Message is optional prose for people; nothing may depend on it.
	Message string `json:"message,omitempty"`
}

// Validate applies Parse's semantic checks to a Result built in Go: known
// category and retry, non-empty operation and correlation_id, and ok that
// agrees with the category. A zero Category or Retry is reported as a
// missing field (ErrMissingField), because in Go that is what it means:
// nobody set it. The error is a *ParseError with Offset -1.
func (r Result) Validate() error {
	if err := r.check(nil); err != nil {
		return err
	}
	return nil
}

// check holds the value and consistency checks shared by Parse and Validate,
// in contract field order, so both report the same first problem.
// offsets is nil for a Result built in Go; for a parsed one it maps each
// field to the offset of its value, and means every field was present.
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
	if r.OK != (r.Category == Succeeded) {
		want := "false"
		if r.Category == Succeeded {
			want = "true"
		}
		return &ParseError{Field: "ok", Offset: off("ok"), Err: ErrOKContradicts,
			Detail: fmt.Sprintf(`ok is %t but category is %q (ok must be %s: it is true exactly when category is %q)`,
				r.OK, r.Category, want, Succeeded)}
	}
	return nil
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
		// Unreachable for this struct of strings and a bool; kept so a
		// future field cannot fail silently.
		return nil, fmt.Errorf("result: encode: %w", err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > MaxSize {
		return nil, tooLarge(len(out))
	}
	return out, nil
}
