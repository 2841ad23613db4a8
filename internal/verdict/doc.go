// Package verdict judges one case run: a pure function from evidence (what the
// tool printed, what the rig established remotely, where the cut landed) to
// findings. It performs no I/O, so every rule is tested by table and fuzzed.
// It owns the rules; the words of its verdict (report.Verdict, report.Grade,
// report.Violation, the assertion names) are report.json's, defined there.
//
// The four assertions (seed 003):
//
//  1. category: the category and retry instruction fit what the caller could
//     know when the transport died — exact, conservative or unsafe.
//  2. no_blind_retry: the operation was executed at most once for the
//     correlation id unless a reconcile probe ran in between; a command
//     sent again under the operation id of its first attempt, which the
//     remote side ran once and de-duplicated after, is no blind retry (a
//     new id, or none, is); and the tool returned within its deadline
//     budget.
//  3. remote_state: the remote state was established by probes, or the
//     verdict says why it stays unknown.
//  4. evidence: the result carries the correlation id and operation it was
//     given, and nothing secret appears in the result, stdout or stderr.
//
// A case whose cut did not land, or whose truth sources disagree, is
// inconclusive, never a pass.
package verdict
