package result

import (
	"errors"
	"fmt"
	"reflect"
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

// The entries of fleetDoc, the design's example run on three hosts. The
// hosts cases edit one entry each; every entry's text is unique in fleetDoc.
const (
	host0 = `{"host": "127.0.0.1:40022", "ok": true, "category": "succeeded", "retry": "never"}`
	host1 = `{"host": "127.0.0.1:40023", "ok": false, "category": "outcome_unknown", "retry": "reconcile_first", ` +
		`"message": "cut after the command started"}`
	host2 = `{"host": "127.0.0.1:40024", "ok": false, "category": "confirmed_failure", "retry": "bounded", ` +
		`"message": "exit status 3"}`
	fleetHosts = `[` + host0 + `, ` + host1 + `, ` + host2 + `]`
)

// fleetDoc is doc with hosts: what the tool knows of each of three hosts.
var fleetDoc = strings.TrimSuffix(doc, "}") + `, "hosts": ` + fleetHosts + `}`

// fleet returns the Result of fleetDoc; each call has its own Hosts.
func fleet() Result {
	r := docResult
	r.Hosts = []HostResult{
		{Host: "127.0.0.1:40022", OK: true, Category: Succeeded, Retry: Never},
		{Host: "127.0.0.1:40023", Category: OutcomeUnknown, Retry: ReconcileFirst, Message: "cut after the command started"},
		{Host: "127.0.0.1:40024", Category: ConfirmedFailure, Retry: Bounded, Message: "exit status 3"},
	}
	return r
}

// editHost returns fleetDoc with entry i (host0, host1 or host2) changed:
// the first occurrence of old in it replaced by new.
func editHost(i int, old, new string) string {
	entry := []string{host0, host1, host2}[i]
	if !strings.Contains(entry, old) {
		panic(fmt.Sprintf("editHost: %s not in hosts[%d]", old, i))
	}
	return replaceHost(i, strings.Replace(entry, old, new, 1))
}

// replaceHost returns fleetDoc with entry i replaced by the text entry.
func replaceHost(i int, entry string) string {
	old := []string{host0, host1, host2}[i]
	return strings.Replace(fleetDoc, old, entry, 1)
}

// editFleet returns fleetDoc with the first occurrence of old replaced by new.
func editFleet(old, new string) string {
	if !strings.Contains(fleetDoc, old) {
		panic("editFleet: " + old + " not in fleetDoc")
	}
	return strings.Replace(fleetDoc, old, new, 1)
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
	return append(topLevelCases(), hostsCases()...)
}

// topLevelCases are the cases of contract version 1: results without hosts.
func topLevelCases() []parseCase {
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
		{name: "operation id", in: `{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c","operation_id":"op-7f3a.1:x_Y"}`,
			want: &Result{OK: true, Category: Succeeded, Operation: "op", Retry: Never, CorrelationID: "c", OperationID: "op-7f3a.1:x_Y"}},
		{name: "longest operation id", in: `{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c","operation_id":"` + strings.Repeat("o", 128) + `"}`,
			want: &Result{OK: true, Category: Succeeded, Operation: "op", Retry: Never, CorrelationID: "c", OperationID: strings.Repeat("o", 128)}},

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
			field: "exit_status", at: `"exit_status"`, contains: []string{`"exit_status"`, "allowed: ok, category, operation, retry, correlation_id, operation_id, message, hosts"}},
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
		{name: "empty operation_id", in: edit(`"c-7f3a"`, `"c", "operation_id": ""`), err: ErrInvalidOperationID, field: "operation_id",
			contains: []string{`"" is empty; an operation id is 1 to 128 of`}},
		{name: "operation_id with a space", in: edit(`"c-7f3a"`, `"c", "operation_id": "op 1"`), err: ErrInvalidOperationID, field: "operation_id", at: `"op 1"`,
			contains: []string{`has ' ' at byte 2`}},
		{name: "operation_id starting with a dot", in: edit(`"c-7f3a"`, `"c", "operation_id": ".op"`), err: ErrInvalidOperationID, field: "operation_id"},
		{name: "operation_id not ASCII", in: edit(`"c-7f3a"`, `"c", "operation_id": "op-\u00e9"`), err: ErrInvalidOperationID, field: "operation_id"},
		{name: "operation_id too long", in: edit(`"c-7f3a"`, `"c", "operation_id": "`+strings.Repeat("o", 129)+`"`), err: ErrInvalidOperationID, field: "operation_id",
			contains: []string{"is 129 bytes long"}},
		{name: "operation_id a number", in: edit(`"c-7f3a"`, `"c", "operation_id": 7`), err: ErrWrongType, field: "operation_id"},
		{name: "operation_id checked before consistency", in: `{"ok": true, "category": "outcome_unknown", "operation": "op", "retry": "never", "correlation_id": "c", "operation_id": "-"}`,
			err: ErrInvalidOperationID, field: "operation_id"},
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

// hostsCases are the cases of contract version 2: fleet results, with hosts.
func hostsCases() []parseCase {
	fl := fleet()
	one := Result{OK: true, Category: Succeeded, Operation: "op", Retry: Never, CorrelationID: "c",
		Hosts: []HostResult{{Host: "h", OK: true, Category: Succeeded, Retry: Never}}}
	twoHosts := func(a, b string) *Result {
		r := one
		r.Hosts = []HostResult{{Host: a, OK: true, Category: Succeeded, Retry: Never},
			{Host: b, Category: LocalFailure, Retry: Bounded}}
		return &r
	}
	pretty := "{\n  \"ok\": false,\n  \"category\": \"outcome_unknown\",\n  \"operation\": \"restart_service\",\n" +
		"  \"retry\": \"reconcile_first\",\n  \"correlation_id\": \"c-7f3a\",\n  \"hosts\": [\n" +
		"    {\"host\": \"a\", \"ok\": true, \"category\": \"succeeded\", \"retry\": \"never\"},\r\n" +
		"\t{\n\t  \"host\": \"b\",\n\t  \"ok\": false,\n\t  \"category\": \"outcome_unknown\"\n\t}\n  ]\n}\n"
	dupHost := editHost(2, `"127.0.0.1:40024"`, `"127.0.0.1:40022"`)
	return []parseCase{
		// Accepted.
		{name: "fleet", in: fleetDoc, want: &fl},
		{name: "fleet of one host",
			in:   `{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c","hosts":[{"host":"h","ok":true,"category":"succeeded","retry":"never"}]}`,
			want: &one},
		{name: "fleet, empty host message, any key order",
			in:   `{"hosts":[{"message":"","retry":"never","category":"succeeded","ok":true,"host":"h"}],"correlation_id":"c","retry":"never","operation":"op","category":"succeeded","ok":true}`,
			want: &one},
		{name: "hosts differing in case are different hosts",
			in: `{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c","hosts":[` +
				`{"host":"a","ok":true,"category":"succeeded","retry":"never"},{"host":"A","ok":false,"category":"local_failure","retry":"bounded"}]}`,
			want: twoHosts("a", "A")},
		{name: "escapes in a host",
			in: `{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c","hosts":[` +
				`{"host":"a","ok":true,"category":"succeeded","retry":"never"},{"host":"\u0062\"","ok":false,"category":"local_failure","retry":"bounded"}]}`,
			want: twoHosts("a", `b"`)},

		// The hosts field itself.
		{name: "hosts as object", in: editFleet(fleetHosts, `{"host": "h"}`), err: ErrWrongType, field: "hosts",
			at: `{"host": "h"}`, msg: fmt.Sprintf(`result: wrong type at offset %d: field "hosts" is an object, want array`, len(doc)+10)},
		{name: "hosts as null", in: editFleet(fleetHosts, `null`), err: ErrWrongType, field: "hosts", at: `null`},
		{name: "hosts as string", in: editFleet(fleetHosts, `"127.0.0.1:40022"`), err: ErrWrongType, field: "hosts",
			at: `"127.0.0.1:40022"`, contains: []string{`field "hosts" is a string, want array`}},
		{name: "empty hosts", in: editFleet(fleetHosts, `[]`), err: ErrEmptyValue, field: "hosts", at: `[]`,
			contains: []string{`field "hosts" is an empty array`}},
		{name: "empty hosts with whitespace", in: editFleet(fleetHosts, "[ \n\t]"), err: ErrEmptyValue, field: "hosts", at: "[ "},
		{name: "hosts key case matters", in: editFleet(`"hosts"`, `"Hosts"`), err: ErrUnknownField, field: "Hosts", at: `"Hosts"`},
		{name: "duplicate hosts", in: editFleet(`"hosts": [`, `"hosts": [`+host0+`], "hosts": [`), err: ErrDuplicateField,
			field: "hosts", at: `"hosts"`, last: true},

		// An entry that is not an object.
		{name: "entry as string", in: replaceHost(1, `"127.0.0.1:40023"`), err: ErrWrongType, field: "hosts[1]",
			at: `"127.0.0.1:40023"`, contains: []string{"hosts[1] is a string, want object"}},
		{name: "entry as null", in: replaceHost(2, `null`), err: ErrWrongType, field: "hosts[2]", at: `null`},
		{name: "entry as array", in: replaceHost(0, `[`+host0+`]`), err: ErrWrongType, field: "hosts[0]",
			at: `[` + host0, contains: []string{"hosts[0] is an array, want object"}},
		{name: "entry as number", in: replaceHost(2, `42.5`), err: ErrWrongType, field: "hosts[2]", at: `42.5`},

		// Unknown and duplicate fields in an entry.
		{name: "unknown field in entry", in: editHost(2, `"retry": "bounded"`, `"retry": "bounded", "exit_status": 3`),
			err: ErrUnknownField, field: "hosts[2].exit_status", at: `"exit_status"`,
			contains: []string{`"exit_status" is not part of a hosts entry (allowed: host, ok, category, retry, message)`}},
		{name: "top-level field in entry", in: editHost(1, `"ok": false`, `"ok": false, "operation": "x"`),
			err: ErrUnknownField, field: "hosts[1].operation", at: `"operation"`, last: true},
		{name: "entry key case matters", in: editHost(0, `"host"`, `"Host"`), err: ErrUnknownField, field: "hosts[0].Host", at: `"Host"`},
		{name: "duplicate field in entry", in: editHost(2, `"retry": "bounded"`, `"retry": "bounded", "ok": false`),
			err: ErrDuplicateField, field: "hosts[2].ok", at: `"ok"`, last: true, contains: []string{`"hosts[2].ok" appears again (first at offset`}},
		{name: "duplicate in entry by escape", in: editHost(0, `"ok": true`, `"\u0068ost": "x", "ok": true`),
			err: ErrDuplicateField, field: "hosts[0].host", at: `"\u0068ost"`},
		{name: "unknown beats missing in entry", in: replaceHost(1, `{"zzz": 1}`), err: ErrUnknownField, field: "hosts[1].zzz", at: `"zzz"`},
		{name: "duplicate beats missing and types in entry", in: replaceHost(1, `{"ok": 1, "ok": 2}`), err: ErrDuplicateField,
			field: "hosts[1].ok", at: `"ok": 2`},

		// Missing fields in an entry: the offset is the entry's.
		{name: "missing host", in: editHost(1, `"host": "127.0.0.1:40023", `, ``), err: ErrMissingField, field: "hosts[1].host",
			at:       `{"ok": false, "category": "outcome_unknown", "retry"`,
			contains: []string{`"hosts[1].host" (required: host, ok, category, retry)`}},
		{name: "missing ok in entry", in: editHost(2, `"ok": false, `, ``), err: ErrMissingField, field: "hosts[2].ok",
			at: `{"host": "127.0.0.1:40024"`},
		{name: "missing category in entry", in: editHost(2, `"category": "confirmed_failure", `, ``), err: ErrMissingField,
			field: "hosts[2].category", at: `{"host": "127.0.0.1:40024"`},
		{name: "missing retry in entry", in: editHost(0, `, "retry": "never"`, ``), err: ErrMissingField,
			field: "hosts[0].retry", at: `{"host": "127.0.0.1:40022"`},
		{name: "empty entry", in: replaceHost(0, `{}`), err: ErrMissingField, field: "hosts[0].host", at: `{}`},
		{name: "missing beats wrong type in entry", in: editHost(1, `"host": "127.0.0.1:40023", "ok": false`, `"ok": "no"`),
			err: ErrMissingField, field: "hosts[1].host", at: `{"ok": "no"`},
		{name: "offsets in a pretty-printed fleet", in: pretty, err: ErrMissingField, field: "hosts[1].retry", at: "{\n\t"},

		// Types in an entry.
		{name: "host as number", in: editHost(0, `"127.0.0.1:40022"`, `40022`), err: ErrWrongType, field: "hosts[0].host",
			at: `40022`, contains: []string{`field "hosts[0].host" is a number, want string`}},
		{name: "ok as string in entry", in: editHost(1, `false`, `"false"`), err: ErrWrongType, field: "hosts[1].ok", at: `"false"`},
		{name: "category as null in entry", in: editHost(2, `"confirmed_failure"`, `null`), err: ErrWrongType,
			field: "hosts[2].category", at: `null`},
		{name: "retry as array in entry", in: editHost(0, `"never"`, `["never"]`), err: ErrWrongType,
			field: "hosts[0].retry", at: `["never"]`},
		{name: "message as boolean in entry", in: editHost(2, `"exit status 3"`, `false`), err: ErrWrongType,
			field: "hosts[2].message", at: `false}`},
		{name: "wrong type beats unknown value in entry", in: editHost(2, `"retry": "bounded"`, `"retry": 7`),
			err: ErrWrongType, field: "hosts[2].retry", at: `7, "message"`},

		// Values in an entry, in contract order.
		{name: "empty host", in: editHost(1, `"127.0.0.1:40023"`, `""`), err: ErrEmptyValue, field: "hosts[1].host", at: `""`,
			contains: []string{`field "hosts[1].host" is the empty string`}},
		{name: "unknown category in entry", in: editHost(2, `"confirmed_failure"`, `"done"`), err: ErrUnknownCategory,
			field: "hosts[2].category", at: `"done"`, contains: []string{`"done" (valid: succeeded, confirmed_failure`}},
		{name: "empty category in entry", in: editHost(0, `"succeeded"`, `""`), err: ErrUnknownCategory, field: "hosts[0].category", at: `""`},
		{name: "unknown retry in entry", in: editHost(0, `"never"`, `"now"`), err: ErrUnknownRetry, field: "hosts[0].retry",
			at: `"now"`, contains: []string{`"now" (valid: bounded, after_delay, reconcile_first, never)`}},
		{name: "entry category checked before retry", in: editHost(1, `"outcome_unknown", "retry": "reconcile_first"`, `"x", "retry": "y"`),
			err: ErrUnknownCategory, field: "hosts[1].category", at: `"x"`},
		{name: "duplicate host", in: dupHost, err: ErrDuplicateHost, field: "hosts[2].host", at: `"127.0.0.1:40022"`, last: true,
			msg: fmt.Sprintf(`result: duplicate host at offset %d: host "127.0.0.1:40022" is both hosts[0] (at offset %d) and hosts[2]; list each host once`,
				strings.LastIndex(dupHost, `"127.0.0.1:40022"`), strings.Index(dupHost, `"127.0.0.1:40022"`))},
		{name: "duplicate host by escape", in: editHost(1, `"127.0.0.1:40023"`, `"127.0.0.1:4002\u0032"`), err: ErrDuplicateHost,
			field: "hosts[1].host", at: `"127.0.0.1:4002\u0032"`, contains: []string{"hosts[0]", "hosts[1]"}},
		{name: "duplicate host before the entry's category", in: editHost(1, `"127.0.0.1:40023", "ok": false, "category": "outcome_unknown"`,
			`"127.0.0.1:40022", "ok": false, "category": "done"`), err: ErrDuplicateHost, field: "hosts[1].host", at: `"127.0.0.1:40022"`, last: true},

		// Consistency in an entry.
		{name: "ok true but not succeeded in entry", in: editHost(2, `false`, `true`), err: ErrOKContradicts, field: "hosts[2].ok",
			at:       `true, "category": "confirmed_failure"`,
			contains: []string{`hosts[2].ok is true but category is "confirmed_failure" (ok must be false`}},
		{name: "ok false but succeeded in entry", in: editHost(0, `true`, `false`), err: ErrOKContradicts, field: "hosts[0].ok",
			at: `false, "category": "succeeded"`, contains: []string{"ok must be true"}},
		{name: "unknown value beats contradiction in entry", in: editHost(0, `"ok": true, "category": "succeeded"`, `"ok": true, "category": "x"`),
			err: ErrUnknownCategory, field: "hosts[0].category", at: `"x"`},

		// Order between the top level and hosts, and between entries.
		{name: "top-level unknown field before hosts", in: strings.Replace(editFleet(fleetHosts, `[]`), `"ok": false, `, `"ok": false, "exit": 1, `, 1),
			err: ErrUnknownField, field: "exit", at: `"exit"`},
		{name: "top-level missing field before hosts", in: strings.Replace(editFleet(fleetHosts, `[1]`), `"retry": "reconcile_first", `, ``, 1),
			err: ErrMissingField, field: "retry"},
		{name: "hosts type before top-level values", in: strings.Replace(editFleet(fleetHosts, `1`), `"outcome_unknown"`, `"done"`, 1),
			err: ErrWrongType, field: "hosts", at: `1}`},
		{name: "top-level values before hosts", in: strings.Replace(editFleet(fleetHosts, `[]`), `"outcome_unknown"`, `"done"`, 1),
			err: ErrUnknownCategory, field: "category", at: `"done"`},
		{name: "top-level consistency before hosts", in: strings.Replace(editHost(0, `"retry"`, `"zzz": 0, "retry"`), "false", "true", 1),
			err: ErrOKContradicts, field: "ok", at: `true`},
		{name: "earlier entry first", in: strings.Replace(editHost(0, `"succeeded"`, `"done"`), `"bounded"`, `"bounded", "zzz": 1`, 1),
			err: ErrUnknownCategory, field: "hosts[0].category", at: `"done"`},
		{name: "entry fields before its values", in: editHost(0, `"ok": true, "category": "succeeded"`, `"ok": true, "category": "x", "zzz": 1`),
			err: ErrUnknownField, field: "hosts[0].zzz", at: `"zzz"`},
		{name: "entry fields before its host repeats", in: editHost(1, `"127.0.0.1:40023", "ok": false`, `"127.0.0.1:40022", "zzz": 1, "ok": false`),
			err: ErrUnknownField, field: "hosts[1].zzz", at: `"zzz"`},
		{name: "repeated host before a later entry's problems",
			in:  strings.Replace(editHost(1, `"127.0.0.1:40023"`, `"127.0.0.1:40022"`), `"bounded"`, `"bounded", "zzz": 1`, 1),
			err: ErrDuplicateHost, field: "hosts[1].host", at: `"127.0.0.1:40022"`, last: true},
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
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("Parse = %+v, want %+v", got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted %q as %+v, want %v", tc.in, got, tc.err)
			}
			if !reflect.DeepEqual(got, Result{}) {
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
				if err != nil || !reflect.DeepEqual(got, want) {
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
	if !reflect.DeepEqual(r, docResult) {
		t.Fatalf("Result changed after the input was overwritten: %+v", r)
	}
	b = []byte(fleetDoc)
	if r, err = Parse(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'x'
	}
	if want := fleet(); !reflect.DeepEqual(r, want) {
		t.Fatalf("fleet Result changed after the input was overwritten: %+v", r)
	}
}
