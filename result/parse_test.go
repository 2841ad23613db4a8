package result

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// doc is the design's example result; most cases are small edits of it so
// that each case breaks exactly one rule.
const doc = `{"ok": false, "category": "outcome_unknown", "operation": "restart_service", ` +
	`"retry": "reconcile_first", "correlation_id": "c-7f3a", ` +
	`"message": "connection closed after the remote command started; completion unknown"}`

var docResult = Result{
	OK:            false,
	Category:      OutcomeUnknown,
	Operation:     "restart_service",
	Retry:         ReconcileFirst,
	CorrelationID: "c-7f3a",
	Message:       "connection closed after the remote command started; completion unknown",
}

// edit returns doc with the first occurrence of old replaced by new.
func edit(old, new string) string {
	if !strings.Contains(doc, old) {
		panic("edit: " + old + " not in doc")
	}
	return strings.Replace(doc, old, new, 1)
}

type parseCase struct {
	name  string
	in    string
	err   error  // sentinel; nil means Parse must accept
	field string // ParseError.Field
	// at locates the expected offset: the index of at in the input (its
	// last occurrence when last is set); "" means Offset -1.
	at       string
	last     bool
	atEnd    bool     // expected offset is len(in)
	contains []string // substrings of the error message
	msg      string   // exact error message, when set
	want     *Result  // expected result for accepted input (default docResult)
}

func parseCases() []parseCase {
	minimal := Result{OK: true, Category: Succeeded, Operation: "op", Retry: Never, CorrelationID: "c"}
	return []parseCase{
		// Accepted.
		{name: "design example", in: doc},
		{name: "surrounding whitespace", in: " \t\r\n" + doc + "\n\n"},
		{name: "no message", in: `{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c"}`, want: &minimal},
		{name: "empty message", in: `{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c","message":""}`, want: &minimal},
		{name: "any field order", in: `{"correlation_id":"c","retry":"never","operation":"op","category":"succeeded","ok":true}`, want: &minimal},
		{name: "escaped key is the same key", in: `{"\u006fk":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c"}`, want: &minimal},
		{name: "escapes in values", in: edit(`"c-7f3a"`, `"c-\u00e9\"<&>\n"`),
			want: &Result{Category: OutcomeUnknown, Operation: "restart_service", Retry: ReconcileFirst,
				CorrelationID: "c-é\"<&>\n", Message: docResult.Message}},
		{name: "whitespace-only id is not empty", in: edit(`"c-7f3a"`, `" "`),
			want: &Result{Category: OutcomeUnknown, Operation: "restart_service", Retry: ReconcileFirst,
				CorrelationID: " ", Message: docResult.Message}},
		// Invalid UTF-8 and lone surrogates become U+FFFD, as in encoding/json
		// and the schema validator's reader, so all three see the same text.
		{name: "invalid UTF-8 is replaced", in: edit(`"c-7f3a"`, "\"c-\xff\""),
			want: &Result{Category: OutcomeUnknown, Operation: "restart_service", Retry: ReconcileFirst,
				CorrelationID: "c-\ufffd", Message: docResult.Message}},
		{name: "lone surrogate is replaced", in: edit(`"c-7f3a"`, `"\ud800"`),
			want: &Result{Category: OutcomeUnknown, Operation: "restart_service", Retry: ReconcileFirst,
				CorrelationID: "\ufffd", Message: docResult.Message}},
		{name: "exactly 1 MiB", in: doc + strings.Repeat(" ", MaxSize-len(doc))},

		// Size and emptiness.
		{name: "empty", in: "", err: ErrEmpty, msg: "result: empty output (want one JSON object)"},
		{name: "only whitespace", in: " \n\t\r ", err: ErrEmpty, msg: "result: empty output (want one JSON object)"},
		{name: "too large", in: strings.Repeat(" ", MaxSize+1), err: ErrTooLarge,
			contains: []string{"1048577 bytes", "1048576"}},
		{name: "too large even if valid", in: doc + strings.Repeat(" ", MaxSize+1-len(doc)), err: ErrTooLarge},

		// Syntax.
		{name: "not JSON", in: "restarted ok", err: ErrSyntax, at: "restarted",
			msg: "result: invalid JSON at offset 0: invalid character 'r' looking for beginning of value"},
		{name: "bad literal", in: edit("false", "fals"), err: ErrSyntax, at: `, "category"`,
			contains: []string{"invalid character ','"}},
		{name: "trailing comma", in: edit(`"c-7f3a", `, `"c-7f3a", }`), err: ErrSyntax, at: `}`,
			contains: []string{"looking for beginning of object key string"}},
		{name: "single quotes", in: `{'ok': true}`, err: ErrSyntax, at: `'`},
		{name: "truncated", in: doc[:40], err: ErrSyntax, atEnd: true, contains: []string{"end of the input"}},
		{name: "BOM", in: "\ufeff" + doc, err: ErrSyntax, at: "\ufeff"},
		{name: "syntax error beats shape", in: `[1, 2`, err: ErrSyntax, atEnd: true},

		// Shape.
		{name: "array", in: `[` + doc + `]`, err: ErrNotObject, at: "[", contains: []string{"found an array"}},
		{name: "string", in: ` "succeeded"`, err: ErrNotObject, at: `"`, contains: []string{"found a string"}},
		{name: "null", in: `null`, err: ErrNotObject, at: "null", msg: "result: not a JSON object at offset 0: found null"},
		{name: "number", in: `-1`, err: ErrNotObject, at: "-", contains: []string{"found a number"}},
		{name: "boolean", in: `true`, err: ErrNotObject, at: "true", contains: []string{"found a boolean"}},
		{name: "not object beats trailing data", in: `[] {}`, err: ErrNotObject, at: "["},
		{name: "second object", in: doc + "\n" + doc, err: ErrTrailingData, at: "{", last: true,
			msg: "result: trailing data after the JSON object at offset " + strconv.Itoa(len(doc)+1)},
		{name: "garbage after", in: doc + "done", err: ErrTrailingData, at: "done"},
		{name: "trailing data beats field errors", in: `{"x":1} {}`, err: ErrTrailingData, at: "{", last: true},

		// Unknown and duplicate fields.
		{name: "unknown field", in: edit(`"ok": false, `, `"ok": false, "exit_status": 1, `), err: ErrUnknownField,
			field: "exit_status", at: `"exit_status"`, contains: []string{`"exit_status"`, "allowed: ok, category, operation, retry, correlation_id, message"}},
		{name: "key case matters", in: edit(`"ok"`, `"OK"`), err: ErrUnknownField, field: "OK", at: `"OK"`},
		{name: "unknown beats missing", in: `{"extra": 1}`, err: ErrUnknownField, field: "extra", at: `"extra"`},
		{name: "duplicate category", in: edit(`"operation"`, `"category": "succeeded", "operation"`), err: ErrDuplicateField,
			field: "category", at: `"category"`, last: true, contains: []string{`"category" appears again (first at offset 14)`}},
		{name: "duplicate by escape", in: edit(`"ok": false, `, `"ok": false, "\u006fk": true, `), err: ErrDuplicateField,
			field: "ok", at: `"\u006fk"`},
		{name: "first of unknown and duplicate wins", in: edit(`"message"`, `"ok": false, "zzz": 1, "message"`), err: ErrDuplicateField,
			field: "ok", at: `"ok"`, last: true},
		{name: "duplicate beats missing and types", in: `{"ok": 1, "ok": 2}`, err: ErrDuplicateField, field: "ok", at: `"ok"`, last: true},

		// Missing fields, in contract order.
		{name: "missing ok", in: edit(`"ok": false, `, ``), err: ErrMissingField, field: "ok",
			msg: `result: missing required field: "ok" (required: ok, category, operation, retry, correlation_id)`},
		{name: "missing category", in: edit(`"category": "outcome_unknown", `, ``), err: ErrMissingField, field: "category"},
		{name: "missing operation", in: edit(`"operation": "restart_service", `, ``), err: ErrMissingField, field: "operation"},
		{name: "missing retry", in: edit(`"retry": "reconcile_first", `, ``), err: ErrMissingField, field: "retry"},
		{name: "missing correlation_id", in: edit(`"correlation_id": "c-7f3a", `, ``), err: ErrMissingField, field: "correlation_id"},
		{name: "empty object", in: `{}`, err: ErrMissingField, field: "ok"},
		{name: "missing beats wrong type", in: `{"ok": "yes", "category": "succeeded", "operation": "op", "retry": "never"}`,
			err: ErrMissingField, field: "correlation_id"},

		// Types.
		{name: "ok as string", in: edit("false", `"false"`), err: ErrWrongType, field: "ok", at: `"false"`,
			msg: `result: wrong type at offset 7: field "ok" is a string, want boolean`},
		{name: "ok as number", in: edit("false", `0`), err: ErrWrongType, field: "ok", at: `0`, contains: []string{"is a number"}},
		{name: "ok as null", in: edit("false", `null`), err: ErrWrongType, field: "ok", at: `null`, contains: []string{"is null"}},
		{name: "category as number", in: edit(`"outcome_unknown"`, `3`), err: ErrWrongType, field: "category", at: `3`},
		{name: "operation as null", in: edit(`"restart_service"`, `null`), err: ErrWrongType, field: "operation", at: `null`},
		{name: "retry as array", in: edit(`"reconcile_first"`, `["reconcile_first"]`), err: ErrWrongType, field: "retry",
			at: `[`, contains: []string{"is an array, want string"}},
		{name: "correlation_id as object", in: edit(`"c-7f3a"`, `{"id": "c"}`), err: ErrWrongType, field: "correlation_id",
			at: `{"id"`, contains: []string{"is an object"}},
		{name: "message as boolean", in: edit(`"connection closed after the remote command started; completion unknown"`, `true`),
			err: ErrWrongType, field: "message", at: `true`},
		{name: "message as null", in: edit(`"connection closed after the remote command started; completion unknown"`, `null`),
			err: ErrWrongType, field: "message", at: `null`},
		{name: "wrong type beats unknown value", in: `{"ok": true, "category": "nope", "operation": "op", "retry": 1, "correlation_id": "c"}`,
			err: ErrWrongType, field: "retry", at: `1`},

		// Values, in contract order.
		{name: "unknown category", in: edit(`"outcome_unknown"`, `"done"`), err: ErrUnknownCategory, field: "category", at: `"done"`,
			msg: `result: unknown category at offset 26: "done" (valid: succeeded, confirmed_failure, outcome_unknown, ` +
				`local_failure, authentication_failed, authorization_denied, rate_limited, malformed_response)`},
		{name: "category case matters", in: edit(`"outcome_unknown"`, `"Outcome_Unknown"`), err: ErrUnknownCategory, field: "category"},
		{name: "empty category", in: edit(`"outcome_unknown"`, `""`), err: ErrUnknownCategory, field: "category", contains: []string{`"" (valid:`}},
		{name: "unknown retry", in: edit(`"reconcile_first"`, `"retry_now"`), err: ErrUnknownRetry, field: "retry", at: `"retry_now"`,
			contains: []string{`"retry_now" (valid: bounded, after_delay, reconcile_first, never)`}},
		{name: "empty operation", in: edit(`"restart_service"`, `""`), err: ErrEmptyValue, field: "operation", at: `""`,
			contains: []string{`field "operation"`}},
		{name: "empty correlation_id", in: edit(`"c-7f3a"`, `""`), err: ErrEmptyValue, field: "correlation_id", at: `""`,
			contains: []string{`field "correlation_id"`}},
		{name: "category checked before retry", in: `{"ok": false, "category": "x", "operation": "op", "retry": "y", "correlation_id": "c"}`,
			err: ErrUnknownCategory, field: "category"},
		{name: "unknown value beats contradiction", in: `{"ok": true, "category": "x", "operation": "op", "retry": "never", "correlation_id": "c"}`,
			err: ErrUnknownCategory, field: "category"},

		// Consistency.
		{name: "ok true but not succeeded", in: edit("false", "true"), err: ErrOKContradicts, field: "ok", at: "true",
			msg: `result: ok contradicts category at offset 7: ok is true but category is "outcome_unknown" ` +
				`(ok must be false: it is true exactly when category is "succeeded")`},
		{name: "ok false but succeeded", in: edit(`"outcome_unknown"`, `"succeeded"`), err: ErrOKContradicts, field: "ok",
			at: "false", contains: []string{`ok is false but category is "succeeded"`, "ok must be true"}},
	}
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if tc.err == nil {
				if err != nil {
					t.Fatalf("Parse rejected a valid result: %v", err)
				}
				want := docResult
				if tc.want != nil {
					want = *tc.want
				}
				if got != want {
					t.Fatalf("Parse = %+v, want %+v", got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted %q as %+v, want %v", tc.in, got, tc.err)
			}
			if got != (Result{}) {
				t.Errorf("Parse returned %+v with an error, want the zero Result", got)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %q is not %q", err, tc.err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Unwrap() != tc.err {
				t.Errorf("Unwrap = %v, want the sentinel %v", pe.Unwrap(), tc.err)
			}
			if pe.Field != tc.field {
				t.Errorf("Field = %q, want %q (error: %v)", pe.Field, tc.field, err)
			}
			wantOff := int64(-1)
			switch {
			case tc.atEnd:
				wantOff = int64(len(tc.in))
			case tc.at != "" && tc.last:
				wantOff = int64(strings.LastIndex(tc.in, tc.at))
			case tc.at != "":
				wantOff = int64(strings.Index(tc.in, tc.at))
			}
			if tc.at != "" || tc.atEnd || tc.msg != "" || tc.err == ErrMissingField || tc.err == ErrEmpty || tc.err == ErrTooLarge {
				if pe.Offset != wantOff {
					t.Errorf("Offset = %d, want %d (error: %v)", pe.Offset, wantOff, err)
				}
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("message\n got: %s\nwant: %s", err, tc.msg)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not contain %q", err, s)
				}
			}
			if !strings.HasPrefix(err.Error(), "result: ") {
				t.Errorf("message %q lacks the package prefix", err)
			}
		})
	}
}

// TestParseEveryCategory checks that each category parses when ok agrees with
// it and is refused when ok contradicts it, for every retry instruction.
func TestParseEveryCategory(t *testing.T) {
	for _, c := range Categories() {
		for _, r := range Retries() {
			t.Run(string(c)+"/"+string(r), func(t *testing.T) {
				ok := c == Succeeded
				want := Result{OK: ok, Category: c, Operation: "op", Retry: r, CorrelationID: "id"}
				in := `{"ok":` + boolText(ok) + `,"category":"` + string(c) + `","operation":"op","retry":"` +
					string(r) + `","correlation_id":"id"}`
				got, err := Parse([]byte(in))
				if err != nil || got != want {
					t.Fatalf("Parse(%s) = %+v, %v; want %+v", in, got, err, want)
				}
				bad := strings.Replace(in, boolText(ok), boolText(!ok), 1)
				if _, err := Parse([]byte(bad)); !errors.Is(err, ErrOKContradicts) {
					t.Fatalf("Parse(%s) error = %v, want ErrOKContradicts", bad, err)
				}
			})
		}
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestParseErrorWithoutSentinel(t *testing.T) {
	// A hand-built ParseError must still print something sensible.
	e := &ParseError{Offset: -1, Detail: "x"}
	if got, want := e.Error(), "result: invalid result: x"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestParseDoesNotAliasInput(t *testing.T) {
	// The caller may reuse its buffer (e.g. a pipe reader's); the Result
	// must not change with it.
	b := []byte(doc)
	r, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'x'
	}
	if r != docResult {
		t.Fatalf("Result changed after the input was overwritten: %+v", r)
	}
}
