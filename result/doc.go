// Package result owns the result contract of sshrig: the one small JSON
// object that a tool under test prints on stdout after it tried to run an
// operation on a remote host, and the strict parser the rig reads it with.
//
// The rig cuts SSH connections at exact moments and then judges whether the
// tool told the truth. That judgement is only as good as the report it reads,
// so the contract is small and parsing is strict: a report that two
// consumers could read differently is itself a defect.
//
// # The contract
//
// One JSON object, for example:
//
//	{"ok": false, "category": "outcome_unknown", "operation": "restart_service",
//	 "retry": "reconcile_first", "correlation_id": "c-7f3a",
//	 "message": "connection closed after the remote command started; completion unknown"}
//
// Its fields:
//
//   - ok (boolean, required): true exactly when category is "succeeded". It is
//     redundant on purpose, so that a caller which reads only ok is not misled.
//   - category (string, required): what the tool knows about the outcome; one
//     of the Category constants. outcome_unknown is the honest answer whenever
//     the request may have reached the remote side and no result came back.
//   - operation (string, required, non-empty): what was attempted.
//   - retry (string, required): what the caller should do next; one of the
//     Retry constants. After outcome_unknown that is usually reconcile_first.
//   - correlation_id (string, required, non-empty): the id the tool was
//     given; it ties the report to the remote markers and the rig's event log.
//   - operation_id (string, optional): the operation id the tool sent the
//     command under, the same each time it sent it, so that the remote side
//     ran the work at most once; 1 to 128 of A-Z a-z 0-9 . _ : -, the first a
//     letter or digit (ErrInvalidOperationID otherwise).
//   - message (string, optional): prose for people. Nothing may depend on it,
//     and it must not contain secrets.
//   - hosts (array, optional, not empty): for an operation the tool ran on
//     several hosts at once (a fleet), one entry per host it was given; see
//     below.
//
// No other field is allowed, each field appears once, and nothing but JSON
// whitespace may surround the object. Input larger than MaxSize (1 MiB) is
// rejected before any parsing. Parse reports every violation as a *ParseError that
// unwraps to one sentinel (ErrUnknownCategory, ErrTrailingData, ...), so
// callers can branch with errors.Is while people read a precise message with
// the byte offset of the problem.
//
// Go tools build a Result and print the output of Result.Marshal, which
// validates first; Validate alone checks a Result without encoding it.
//
// # Fleets
//
// A tool that runs one operation on several hosts at once (parallel-ssh, an
// Ansible inventory, the rig's SSHRIG_HOSTS) still prints one object. Its
// top-level fields sum the whole operation up, and hosts says what the tool
// knows of each host (Result.Hosts, HostResult):
//
//	{"ok": false, "category": "outcome_unknown", "operation": "restart_service",
//	 "retry": "reconcile_first", "correlation_id": "c-7f3a",
//	 "hosts": [
//	  {"host": "127.0.0.1:40022", "ok": true, "category": "succeeded", "retry": "never"},
//	  {"host": "127.0.0.1:40023", "ok": false, "category": "outcome_unknown", "retry": "reconcile_first",
//	   "message": "connection closed after the remote command started"}]}
//
// Each entry has exactly the fields host (non-empty string: the host as the
// tool was given it), ok, category, retry (as at the top level, with the
// same rule that ok is true exactly when category is "succeeded") and the
// optional message. No two entries may name the same host (ErrDuplicateHost;
// compared exactly, after JSON unescaping). Errors about an entry name it
// by index, as in ParseError.Field "hosts[2].category". Result.Host finds a
// host's entry.
//
// # Versions
//
// ContractVersion is 2. Version 1 had no hosts; version 2 added it as an
// optional field, so every version 1 result is still valid and encodes the
// same. The object carries no version field.
//
// # Tools in other languages
//
// The same contract is published as JSON Schema (draft 2020-12) in
// docs/result.schema.json. Validate a tool's output against it in that
// tool's own tests. Tests in this package prove that the schema and this
// package agree: same enums, same required fields and properties, and the
// same verdict on a table of documents and on fuzzed input.
//
// Three rules cannot be expressed by JSON Schema, because a schema validator
// only sees the already-parsed value: no duplicate keys, no data after the
// object (a second object, a log line), and the 1 MiB size cap. A fourth,
// that no two entries of hosts name the same host, is beyond JSON Schema
// because it can only require whole array items to be unique, not one
// property of them. A tool that passes the schema but breaks one of these
// is still rejected by the rig; print exactly one object, ideally on one
// line, list each host once, and log to stderr.
package result
