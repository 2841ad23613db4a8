package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/markers"
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
		{"fleet: hosts last, empty host messages omitted", fleet(),
			`{"ok":false,"category":"outcome_unknown","operation":"restart_service","retry":"reconcile_first",` +
				`"correlation_id":"c-7f3a","message":"connection closed after the remote command started; completion unknown",` +
				`"hosts":[{"host":"127.0.0.1:40022","ok":true,"category":"succeeded","retry":"never"},` +
				`{"host":"127.0.0.1:40023","ok":false,"category":"outcome_unknown","retry":"reconcile_first","message":"cut after the command started"},` +
				`{"host":"127.0.0.1:40024","ok":false,"category":"confirmed_failure","retry":"bounded","message":"exit status 3"}]}`},
		{"fleet of one host, escapes in the host",
			Result{OK: true, Category: Succeeded, Operation: "op", Retry: Never, CorrelationID: "c",
				Hosts: []HostResult{{Host: "<h>\"1\"", OK: true, Category: Succeeded, Retry: Never}}},
			`{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c",` +
				`"hosts":[{"host":"<h>\"1\"","ok":true,"category":"succeeded","retry":"never"}]}`},
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
			if err != nil || !reflect.DeepEqual(back, tc.r) {
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
			if err != nil || !reflect.DeepEqual(back, r) {
				t.Fatalf("%s/%s: Parse(%s) = %+v, %v", c, rt, b, back, err)
			}
		}
	}
}

// TestRoundTripFleet round-trips a fleet result with one host for every
// category and retry instruction, under every top-level category.
func TestRoundTripFleet(t *testing.T) {
	var hosts []HostResult
	for _, c := range Categories() {
		for _, rt := range Retries() {
			hosts = append(hosts, HostResult{Host: fmt.Sprintf("10.0.0.%d:22", len(hosts)+1), OK: c == Succeeded,
				Category: c, Retry: rt, Message: rt.Meaning()})
		}
	}
	for _, c := range Categories() {
		r := Result{OK: c == Succeeded, Category: c, Operation: "deploy", Retry: Never, CorrelationID: "c-1", Hosts: hosts}
		b, err := r.Marshal()
		if err != nil {
			t.Fatalf("%s: Marshal: %v", c, err)
		}
		back, err := Parse(b)
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("%s: Parse(%s) = %+v, %v", c, b, back, err)
		}
		if n := strings.Count(string(b), `"host":`); n != len(hosts) {
			t.Fatalf("%s: Marshal wrote %d hosts, want %d", c, n, len(hosts))
		}
	}
}

// TestMarshalWithoutHostsUnchanged pins the encoding of a result without
// hosts to what contract version 1 produced, byte for byte: a nil Hosts
// adds nothing.
func TestMarshalWithoutHostsUnchanged(t *testing.T) {
	// The output of Marshal before hosts existed.
	const v1 = `{"ok":false,"category":"outcome_unknown","operation":"restart_service","retry":"reconcile_first",` +
		`"correlation_id":"c-7f3a","message":"connection closed after the remote command started; completion unknown"}`
	b, err := docResult.Marshal()
	if err != nil || string(b) != v1 {
		t.Fatalf("Marshal() = %s, %v\nwant %s", b, err, v1)
	}
	if bytes.Contains(b, []byte("hosts")) {
		t.Fatalf("Marshal() of a result without hosts mentions hosts: %s", b)
	}
}

func TestHost(t *testing.T) {
	r := fleet()
	for _, want := range r.Hosts {
		got, ok := r.Host(want.Host)
		if !ok || got != want {
			t.Errorf("Host(%q) = %+v, %t; want %+v", want.Host, got, ok, want)
		}
	}
	for _, name := range []string{"", "127.0.0.1", "127.0.0.1:4002", "127.0.0.1:40022 ", "unknown"} {
		if got, ok := r.Host(name); ok || got != (HostResult{}) {
			t.Errorf("Host(%q) = %+v, %t; want nothing", name, got, ok)
		}
	}
	if got, ok := docResult.Host(""); ok || got != (HostResult{}) {
		t.Errorf("Host on a one-host result = %+v, %t; want nothing", got, ok)
	}
	// Exact match, as for duplicates: case matters.
	r.Hosts = []HostResult{{Host: "web1", Category: LocalFailure, Retry: Bounded}, {Host: "WEB1", OK: true, Category: Succeeded, Retry: Never}}
	if got, ok := r.Host("WEB1"); !ok || got != r.Hosts[1] {
		t.Errorf("Host(WEB1) = %+v, %t; want %+v", got, ok, r.Hosts[1])
	}
}

// validateFleetCases are Go fleet results that break one rule each, for
// TestValidateFleet and TestValidateAgreesWithParse.
func validateFleetCases() []struct {
	name  string
	r     Result
	err   error
	field string
	also  []string // substrings of the message
} {
	with := func(f func(*Result)) Result { r := fleet(); f(&r); return r }
	return []struct {
		name  string
		r     Result
		err   error
		field string
		also  []string
	}{
		{"valid fleet", fleet(), nil, "", nil},
		{"valid fleet of one", with(func(r *Result) { r.Hosts = r.Hosts[:1] }), nil, "", nil},
		{"empty hosts", with(func(r *Result) { r.Hosts = []HostResult{} }), ErrEmptyValue, "hosts", []string{"empty array"}},
		{"zero entry", with(func(r *Result) { r.Hosts[1] = HostResult{} }), ErrMissingField, "hosts[1].category", nil},
		{"zero category", with(func(r *Result) { r.Hosts[2].Category = "" }), ErrMissingField, "hosts[2].category",
			[]string{`"hosts[2].category" is not set`}},
		{"zero retry", with(func(r *Result) { r.Hosts[0].Retry = "" }), ErrMissingField, "hosts[0].retry", nil},
		{"empty host", with(func(r *Result) { r.Hosts[1].Host = "" }), ErrEmptyValue, "hosts[1].host", nil},
		{"unknown category", with(func(r *Result) { r.Hosts[2].Category = "done" }), ErrUnknownCategory, "hosts[2].category", nil},
		{"unknown retry", with(func(r *Result) { r.Hosts[0].Retry = "now" }), ErrUnknownRetry, "hosts[0].retry", nil},
		{"ok contradicts", with(func(r *Result) { r.Hosts[1].OK = true }), ErrOKContradicts, "hosts[1].ok",
			[]string{`hosts[1].ok is true but category is "outcome_unknown"`}},
		{"not ok but succeeded", with(func(r *Result) { r.Hosts[0].OK = false }), ErrOKContradicts, "hosts[0].ok", nil},
		{"duplicate host", with(func(r *Result) { r.Hosts[2].Host = r.Hosts[0].Host }), ErrDuplicateHost, "hosts[2].host",
			[]string{`host "127.0.0.1:40022" is both hosts[0] and hosts[2]`}},
		{"top level before hosts", with(func(r *Result) { r.Operation, r.Hosts = "", []HostResult{} }), ErrEmptyValue, "operation", nil},
		{"top-level consistency before hosts", with(func(r *Result) { r.OK, r.Hosts[0].Category = true, "" }), ErrOKContradicts, "ok", nil},
		{"earlier entry first", with(func(r *Result) { r.Hosts[0].Retry, r.Hosts[1].Host = "now", "" }), ErrUnknownRetry, "hosts[0].retry", nil},
		{"missing before values in an entry", with(func(r *Result) { r.Hosts[1].Host, r.Hosts[1].Retry = "", "" }), ErrMissingField, "hosts[1].retry", nil},
		{"host before category", with(func(r *Result) { r.Hosts[2].Host, r.Hosts[2].Category = r.Hosts[1].Host, "done" }),
			ErrDuplicateHost, "hosts[2].host", nil},
		{"repeated host before a later entry", with(func(r *Result) { r.Hosts[1].Host, r.Hosts[2].Retry = r.Hosts[0].Host, "" }),
			ErrDuplicateHost, "hosts[1].host", nil},
		{"category before retry in an entry", with(func(r *Result) { r.Hosts[1].Category, r.Hosts[1].Retry = "x", "y" }),
			ErrUnknownCategory, "hosts[1].category", nil},
		{"values before consistency in an entry", with(func(r *Result) { r.Hosts[2].OK, r.Hosts[2].Retry = true, "now" }),
			ErrUnknownRetry, "hosts[2].retry", nil},
	}
}

func TestValidateFleet(t *testing.T) {
	for _, tc := range validateFleetCases() {
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
			for _, s := range tc.also {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not contain %q", err, s)
				}
			}
			if b, merr := tc.r.Marshal(); merr == nil || b != nil || merr.Error() != err.Error() {
				t.Fatalf("Marshal() = %q, %v; want nil and the Validate error %v", b, merr, err)
			}
		})
	}
}

// jsonOf is what Parse would read for r built in Go without validation: its
// encoding/json encoding, where a zero category or retry is a missing key
// (as Validate calls it) and an empty non-nil Hosts is "hosts":[].
func jsonOf(t *testing.T, r Result) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(`"category":"",`, ``, `"retry":"",`, ``, `,"retry":""`, ``).Replace(string(b))
	if r.Hosts != nil && len(r.Hosts) == 0 {
		s = strings.TrimSuffix(s, "}") + `,"hosts":[]}`
	}
	return []byte(s)
}

// TestValidateAgreesWithParse checks that Validate and Parse report the same
// first problem (sentinel and field) for a Result and its JSON.
func TestValidateAgreesWithParse(t *testing.T) {
	var cases []struct {
		name string
		r    Result
	}
	for _, tc := range validateFleetCases() {
		cases = append(cases, struct {
			name string
			r    Result
		}{tc.name, tc.r})
	}
	good := Result{OK: false, Category: OutcomeUnknown, Operation: "op", Retry: ReconcileFirst, CorrelationID: "c"}
	cases = append(cases, []struct {
		name string
		r    Result
	}{
		{"top level valid", good},
		{"top level zero category", Result{Operation: "op", Retry: Never, CorrelationID: "c"}},
		{"top level zero retry and empty operation", Result{Category: OutcomeUnknown, CorrelationID: "c"}},
		{"top level unknown retry and ok", Result{OK: true, Category: OutcomeUnknown, Operation: "op", Retry: "x", CorrelationID: "c"}},
	}...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := jsonOf(t, tc.r)
			verr := tc.r.Validate()
			_, perr := Parse(in)
			if (verr == nil) != (perr == nil) {
				t.Fatalf("Validate() = %v but Parse(%s) = %v", verr, in, perr)
			}
			if verr == nil {
				return
			}
			var v, p *ParseError
			if !errors.As(verr, &v) || !errors.As(perr, &p) || v.Err != p.Err || v.Field != p.Field {
				t.Fatalf("first problem differs\nValidate: %v (field %q)\n   Parse: %v (field %q)\n   input: %s",
					verr, v.Field, perr, p.Field, in)
			}
		})
	}
}

// TestOperationIDIsTheMarkersID: an operation id the result accepts is one
// the remote markers can carry, and the other way round.
func TestOperationIDIsTheMarkersID(t *testing.T) {
	if maxOperationIDLen != markers.MaxIDLen {
		t.Fatalf("maxOperationIDLen %d, markers.MaxIDLen %d", maxOperationIDLen, markers.MaxIDLen)
	}
	for _, s := range []string{"a", "op-1", "A.b_c:d-9", "-a", ".", "a b", "a/b", "é", "a\x00", strings.Repeat("o", 128), strings.Repeat("o", 129), ""} {
		if got, want := operationIDProblem(s) == "", markers.ValidID(s) == nil; got != want {
			t.Errorf("%q: result accepts it: %v, markers accepts it: %v", s, got, want)
		}
	}
}
