package operations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CreateRecord is an operation that creates one record and prints it. Its
// contract: stdout is exactly one JSON object
//
//	{"records": [{"id": "<non-empty string>", "status": "created"}]}
//
// with exactly one record, whose id a caller needs for any follow-up (attach
// a note, reconcile). Nothing else is a valid answer, even with exit status 0.
const CreateRecord = "create_record"

// Contract describes the operation's answer in words.
func Contract(operation string) string {
	if operation == CreateRecord {
		return `stdout is exactly one JSON object {"records": [{"id": "<non-empty string>", "status": "created"}]} with exactly one record`
	}
	return ""
}

// HasContract reports whether the operation's answer has a contract.
func HasContract(operation string) bool { return Contract(operation) != "" }

// ErrContract is wrapped by every Check failure.
var ErrContract = errors.New("the answer breaks the operation's contract")

// Check checks an answer against the operation's contract and returns the
// record id it carries. Operations without a contract accept anything.
func Check(operation string, stdout []byte) (string, error) {
	if operation != CreateRecord {
		return "", nil
	}
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: "+format, append([]any{ErrContract}, args...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return fail("not one JSON object: %v", err)
	}
	if _, err := dec.Token(); err == nil {
		return fail("more than one JSON value")
	}
	recordsRaw, ok := raw["records"]
	if !ok {
		keys := make([]string, 0, len(raw))
		for k := range raw {
			keys = append(keys, k)
		}
		return fail("no records field (the object has %s)", strings.Join(keys, ", "))
	}
	var records []map[string]json.RawMessage
	if err := json.Unmarshal(recordsRaw, &records); err != nil {
		return fail("records is not a list of objects: %v", err)
	}
	if len(records) != 1 {
		return fail("%d records, want exactly 1: which one was created cannot be told", len(records))
	}
	idRaw, ok := records[0]["id"]
	if !ok {
		return fail("records[0] has no id")
	}
	var id string
	if err := json.Unmarshal(idRaw, &id); err != nil {
		return fail("records[0].id is %s, want a string", kind(idRaw))
	}
	if id == "" {
		return fail("records[0].id is empty")
	}
	var status string
	if err := json.Unmarshal(records[0]["status"], &status); err != nil || status != "created" {
		return fail("records[0].status is %s, want \"created\"", records[0]["status"])
	}
	return id, nil
}

func kind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "missing"
	case t[0] == 'n':
		return "null"
	case t[0] == '{':
		return "an object"
	case t[0] == '[':
		return "a list"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	case t[0] == '"':
		return "a string"
	}
	return "a number"
}

// Fixture is an answer that breaks the contract of CreateRecord in one way.
type Fixture string

// The fixtures.
const (
	IDNull    Fixture = "id-null"    // the id replaced by null
	IDNumber  Fixture = "id-number"  // ... by a number
	IDObject  Fixture = "id-object"  // ... by an object
	IDMissing Fixture = "id-missing" // the id omitted
	ErrorBody Fixture = "error-body" // an error-shaped body, with exit status 0
	Truncated Fixture = "truncated"  // the JSON cut short
	Duplicate Fixture = "duplicate"  // the record listed twice
	Reordered Fixture = "reordered"  // another record listed first
)

// Fixtures returns every fixture.
func Fixtures() []Fixture {
	return []Fixture{IDNull, IDNumber, IDObject, IDMissing, ErrorBody, Truncated, Duplicate, Reordered}
}

// ParseFixture parses a fixture name.
func ParseFixture(s string) (Fixture, error) {
	for _, f := range Fixtures() {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, 0, 8)
	for _, f := range Fixtures() {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("unknown fixture %q (valid: %s)", s, strings.Join(names, ", "))
}

// Answer is the operation's valid answer for a record made for id.
func Answer(id string) string {
	return fmt.Sprintf(`{"records":[{"id":"rec-%s","status":"created"}]}`, id)
}

// Body is what the fixture prints in place of the valid answer.
func (f Fixture) Body(id string) string {
	rec := "rec-" + id
	switch f {
	case IDNull:
		return `{"records":[{"id":null,"status":"created"}]}`
	case IDNumber:
		return `{"records":[{"id":42,"status":"created"}]}`
	case IDObject:
		return fmt.Sprintf(`{"records":[{"id":{"value":%q},"status":"created"}]}`, rec)
	case IDMissing:
		return `{"records":[{"status":"created"}]}`
	case ErrorBody:
		return `{"error":"quota exceeded","code":429}`
	case Truncated:
		return fmt.Sprintf(`{"records":[{"id":%q,"sta`, rec)
	case Duplicate:
		return fmt.Sprintf(`{"records":[{"id":%q,"status":"created"},{"id":%q,"status":"created"}]}`, rec, rec)
	case Reordered:
		return fmt.Sprintf(`{"records":[{"id":"rec-older","status":"existing"},{"id":%q,"status":"created"}]}`, rec)
	}
	return Answer(id)
}

// Command is the remote workload that prints body and exits 0.
func Command(body string) string {
	return "printf '%s\\n' '" + strings.ReplaceAll(body, "'", `'\''`) + "'"
}

// A step sequence (seed 003: create a record, read it back, attach a note).
// The record lives in the command's working directory on the target, under
// records/, named by its id.

// RecordID is the id of the record the step sequence of correlation id creates.
func RecordID(correlationID string) string { return "rec-" + correlationID }

// CreateAndStore is create_record's workload for a step sequence: it stores
// the record, then prints the answer.
func CreateAndStore(correlationID string) string {
	answer := Answer(correlationID)
	return "mkdir -p records && " + Command(answer) + " > records/" + RecordID(correlationID) + ".json && " + Command(answer)
}

// Lookup prints the stored record in create_record's answer format, or an
// answer with no record: a probe, it changes nothing.
func Lookup(correlationID string) string {
	return "cat records/" + RecordID(correlationID) + ".json 2>/dev/null || " + Command(`{"records":[]}`)
}

// FollowUpTemplate attaches a note to the record whose id replaces {id}.
const FollowUpTemplate = "printf 'note\\n' >> records/{id}.notes"

// FollowUp is FollowUpTemplate for a record id.
func FollowUp(recordID string) string { return strings.ReplaceAll(FollowUpTemplate, "{id}", recordID) }
