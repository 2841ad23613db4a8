package result

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestCategories(t *testing.T) {
	want := []Category{Succeeded, ConfirmedFailure, OutcomeUnknown, LocalFailure,
		AuthenticationFailed, AuthorizationDenied, RateLimited, MalformedResponse}
	got := Categories()
	if len(got) != len(want) {
		t.Fatalf("Categories() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Categories() = %v, want %v", got, want)
		}
	}
	got[0] = "mutated"
	if Categories()[0] != Succeeded {
		t.Fatal("Categories() returned shared state")
	}
	for _, c := range want {
		t.Run(string(c), func(t *testing.T) {
			if c.Meaning() == "" {
				t.Errorf("%s has no meaning", c)
			}
			p, err := ParseCategory(string(c))
			if err != nil || p != c {
				t.Errorf("ParseCategory(%q) = %q, %v", c, p, err)
			}
		})
	}
	if got, want := Succeeded.Meaning(), "the remote command ran and reported exit status 0 (ok: true)"; got != want {
		t.Errorf("Succeeded.Meaning() = %q, want %q", got, want)
	}
}

func TestParseCategoryRejects(t *testing.T) {
	for _, s := range []string{"", "done", "Succeeded", " succeeded", "succeeded\n", "outcome-unknown"} {
		t.Run(s, func(t *testing.T) {
			c, err := ParseCategory(s)
			if !errors.Is(err, ErrUnknownCategory) {
				t.Fatalf("ParseCategory(%q) = %q, %v; want ErrUnknownCategory", s, c, err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Field != "category" || pe.Offset != -1 {
				t.Fatalf("error %#v: want *ParseError for field category, offset -1", err)
			}
			if !strings.Contains(err.Error(), "malformed_response") {
				t.Errorf("error %q does not list the valid categories", err)
			}
			if Category(s).Meaning() != "" {
				t.Errorf("Meaning of unknown %q is not empty", s)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	want := []Retry{Bounded, AfterDelay, ReconcileFirst, Never}
	got := Retries()
	if len(got) != len(want) {
		t.Fatalf("Retries() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Retries() = %v, want %v", got, want)
		}
	}
	for _, r := range want {
		t.Run(string(r), func(t *testing.T) {
			if r.Meaning() == "" {
				t.Errorf("%s has no meaning", r)
			}
			p, err := ParseRetry(string(r))
			if err != nil || p != r {
				t.Errorf("ParseRetry(%q) = %q, %v", r, p, err)
			}
		})
	}
	if got, want := Never.Meaning(), "stop; a person or an authorised recovery path takes over"; got != want {
		t.Errorf("Never.Meaning() = %q, want %q", got, want)
	}
}

func TestParseRetryRejects(t *testing.T) {
	for _, s := range []string{"", "always", "Never", "reconcile-first"} {
		t.Run(s, func(t *testing.T) {
			_, err := ParseRetry(s)
			if !errors.Is(err, ErrUnknownRetry) {
				t.Fatalf("ParseRetry(%q) error = %v, want ErrUnknownRetry", s, err)
			}
			if !strings.Contains(err.Error(), "bounded, after_delay, reconcile_first, never") {
				t.Errorf("error %q does not list the valid retries", err)
			}
			if Retry(s).Meaning() != "" {
				t.Errorf("Meaning of unknown %q is not empty", s)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := Result{OK: false, Category: OutcomeUnknown, Operation: "op", Retry: ReconcileFirst, CorrelationID: "c"}
	with := func(f func(*Result)) Result { r := good; f(&r); return r }
	cases := []struct {
		name  string
		r     Result
		err   error
		field string
	}{
		{"valid", good, nil, ""},
		{"valid succeeded", with(func(r *Result) { r.OK, r.Category = true, Succeeded }), nil, ""},
		{"zero result", Result{}, ErrMissingField, "category"},
		{"zero category", with(func(r *Result) { r.Category = "" }), ErrMissingField, "category"},
		{"zero retry", with(func(r *Result) { r.Retry = "" }), ErrMissingField, "retry"},
		{"unknown category", with(func(r *Result) { r.Category = "done" }), ErrUnknownCategory, "category"},
		{"unknown retry", with(func(r *Result) { r.Retry = "now" }), ErrUnknownRetry, "retry"},
		{"empty operation", with(func(r *Result) { r.Operation = "" }), ErrEmptyValue, "operation"},
		{"empty correlation id", with(func(r *Result) { r.CorrelationID = "" }), ErrEmptyValue, "correlation_id"},
		{"ok contradicts", with(func(r *Result) { r.OK = true }), ErrOKContradicts, "ok"},
		{"not ok but succeeded", with(func(r *Result) { r.Category = Succeeded }), ErrOKContradicts, "ok"},
		{"values before consistency", with(func(r *Result) { r.OK, r.Operation = true, "" }), ErrEmptyValue, "operation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Validate()
			if tc.err == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("Validate() = %v, want %v", err, tc.err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Field != tc.field || pe.Offset != -1 {
				t.Fatalf("Validate() = %#v, want field %q and offset -1", err, tc.field)
			}
			if b, merr := tc.r.Marshal(); merr == nil || b != nil || merr.Error() != err.Error() {
				t.Fatalf("Marshal() = %q, %v; want nil and the Validate error %v", b, merr, err)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	cases := []struct {
		name string
		r    Result
		want string
	}{
		{"design example", docResult,
			`{"ok":false,"category":"outcome_unknown","operation":"restart_service","retry":"reconcile_first",` +
				`"correlation_id":"c-7f3a","message":"connection closed after the remote command started; completion unknown"}`},
		{"message omitted when empty",
			Result{OK: true, Category: Succeeded, Operation: "op", Retry: Never, CorrelationID: "c"},
			`{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c"}`},
		{"no HTML escaping, newlines escaped",
			Result{Category: LocalFailure, Operation: "a<b>&c", Retry: Bounded, CorrelationID: "c", Message: "line1\nline2"},
			`{"ok":false,"category":"local_failure","operation":"a<b>&c","retry":"bounded","correlation_id":"c","message":"line1\nline2"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.r.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("Marshal()\n got: %s\nwant: %s", b, tc.want)
			}
			if bytes.ContainsAny(b, "\r\n") {
				t.Fatalf("Marshal() output is not one line without a trailing newline: %q", b)
			}
			back, err := Parse(b)
			if err != nil || back != tc.r {
				t.Fatalf("Parse(Marshal()) = %+v, %v; want %+v", back, err, tc.r)
			}
		})
	}
}

func TestMarshalRefusesWhatParseWouldRefuse(t *testing.T) {
	// U+2028 takes 3 bytes in Go but 6 once encoding/json escapes it, so a
	// message under the cap in memory can exceed it on the wire.
	r := Result{Category: OutcomeUnknown, Operation: "op", Retry: ReconcileFirst, CorrelationID: "c",
		Message: strings.Repeat("\u2028", MaxSize/3-10)}
	if len(r.Message) > MaxSize {
		t.Fatal("test message is already over the cap")
	}
	b, err := r.Marshal()
	if !errors.Is(err, ErrTooLarge) || b != nil {
		t.Fatalf("Marshal() = %d bytes, %v; want ErrTooLarge", len(b), err)
	}
}

func TestRoundTripEveryCombination(t *testing.T) {
	for _, c := range Categories() {
		for _, rt := range Retries() {
			r := Result{OK: c == Succeeded, Category: c, Operation: "deploy", Retry: rt, CorrelationID: "c-1", Message: c.Meaning()}
			b, err := r.Marshal()
			if err != nil {
				t.Fatalf("%s/%s: Marshal: %v", c, rt, err)
			}
			back, err := Parse(b)
			if err != nil || back != r {
				t.Fatalf("%s/%s: Parse(%s) = %+v, %v", c, rt, b, back, err)
			}
		}
	}
}
