// Package eventlog owns a run's event log, events.jsonl: one JSON object per
// line, appended by the rig for its own events, the SSH server's and the tool
// adapter's, where every line carries the SHA-256 of the line before it. The
// chain makes the history tamper-evident and checkable offline, without the
// rig, the server or any key: alter, drop, add or reorder a line and the chain
// breaks there; cut the tail and the head hash the rig put in report.json no
// longer matches. Verify names the first bad line and what is wrong with it.
//
// The package knows nothing about what the events mean; it only guarantees
// that what was appended is what is read back.
//
// # Line format
//
// A line is the bytes below followed by a single '\n' (never "\r\n"). Keys
// appear in exactly this order, with no whitespace between fields:
//
//	{"seq":7,"prev":"<64 hex>","time":"2025-01-02T03:04:05.123456789Z","source":"tool","event":"process_exited","case":"c1","correlation_id":"id-1","data":{"exit_code":255}}
//
//	seq             decimal int64 >= 1, no sign or leading zero; line n has seq n
//	prev            lowercase hex SHA-256 of the previous line (see Hash rule)
//	time            UTC, RFC 3339 with exactly nine fractional digits, "Z"
//	source          "rig", "server" or "tool"
//	event           [a-z0-9_]+, e.g. request_built, dispatch_started,
//	                connection_accepted, exec_received, start_marker, cut,
//	                process_exited, complete_marker, result, reconcile_probe,
//	                verdict
//	case            optional JSON string, omitted when empty
//	correlation_id  optional JSON string, omitted when empty
//	data            optional JSON object, always last, omitted when nil or
//	                empty; encoded by encoding/json (so keys are sorted)
//
// source and event are written without escapes (their charsets need none)
// and must be read that way. Anything else — another order, an unknown or
// repeated key, whitespace between fields, CRLF, uppercase hex, a line
// longer than MaxLineSize — is malformed: it is not a line this package
// writes, so accepting it would let a forger vary bytes the format fixes.
//
// # Hash rule
//
// The hash of a line is SHA-256 over its bytes exactly as stored (after
// redaction, see Writer.SetRedactor), without the terminating newline. prev
// of line 1 is Genesis, 64 zeros, rather than SHA-256 of the empty string: it
// is recognisable at a glance and no line hashes to it in practice. The head
// of a log is the hash of its last line, or Genesis when it is empty; it is
// always the prev the next line will carry. Writer.Head returns it with its
// seq.
//
// # Writing
//
// Writer serializes appends, so the rig, the server and the tool adapter log
// from their own goroutines into one chain; time is taken under the lock,
// so automatic times never go backwards along it. Each line is one Write:
// a crash leaves whole lines and at most one partial last line, which Verify
// calls truncated. After a failed write the writer refuses further appends
// (the file's tail is unknown, a next line could not chain). Close syncs the
// file, so the head recorded afterwards describes bytes on disk.
//
// # Expected head
//
// The chain alone cannot show a cut at a line boundary (the remaining lines
// still chain), an extra line appended with a correct prev, or a change to
// the last line (nothing after it points at it). The head recorded in
// report.json can. Verify takes it as "" (unknown), a bare hex hash, or
// "seq:hash" (FormatHead). The seq form is preferred: with only a hash, an
// altered last line and a cut tail look the same, and the number of cut
// lines is unknown.
//
// # What Verify reports
//
// Verify reads line by line. A line is accepted while it is well-formed,
// ends with a newline, has seq = its line number and prev = the hash of the
// line before (Genesis for line 1). At the first line i that is not accepted
// — call the line before it A (Genesis when i = 1), line i B and line i+1 C —
// the first matching rule names the problem:
//
//  0. The expected head is the hash of line j < i, or Genesis: lines j+1 on
//     came after the head was recorded: inserted at j+1, with the count.
//  1. B has no newline (it is the last bytes of the file): truncated at i;
//     the log was cut in the middle of B, or just before its newline.
//  2. B does not parse: malformed at i (empty line, bad JSON, missing or
//     misordered field, bad hex, bad time, unknown source, bad event).
//  3. A later line m is A's true successor (prev = hash of A, seq = A's seq
//     + 1): B does not belong here. If a later line is B's true predecessor
//     (hash = B's prev, seq = B's seq - 1), B was moved: reordered at i
//     ("lines i and i+1 are swapped" when both are i+1). Otherwise lines
//     i..m-1 were added: inserted at i, with their count.
//  4. B's prev is not A's hash, B's seq repeats the seq j of an accepted
//     line, and B is byte-equal to line j: inserted at i (a copy of line j).
//  5. B's prev is not A's hash, B's seq j <= A's seq, and B's prev is the
//     hash of line j-1: the chain forks there, and lines j..i-1 (accepted,
//     since they chain) were added before the original line j: inserted at
//     j, with their count.
//  6. B's prev is not A's hash and a later line is B's true predecessor:
//     reordered at i.
//  7. B's prev is Genesis (i > 1) or the hash of any other line: inserted
//     at i.
//  8. B's seq is right but its prev matches no line: A or B was altered. If
//     C's prev is B's hash (or B is last and B's hash is the expected head),
//     B is as written, so A changed: modified at i-1. If C (or the head)
//     does not vouch for B, B changed (its prev field): modified at i. With
//     neither C nor a head it cannot be told: modified at i-1, and the
//     detail says so. When i = 1 and B is intact, line 1 does not start from
//     Genesis: modified at 1.
//  9. B's prev is right but its seq is not: if C (or the head) vouches for
//     B, it was written so: bad_seq at i; if not, B's seq was altered:
//     modified at i; with neither, bad_seq at i.
//  10. B's seq jumps ahead and its prev matches no line: the lines between
//     were removed: deleted at i, with the count and the missing seqs.
//  11. B's seq repeats or goes back and its prev matches no line: inserted
//     at i.
//
// When every line is accepted, only the expected head can find a problem:
//
//   - no expected head, or it is the last line's hash: intact (a seq that
//     disagrees with the line's is bad_seq at the last line);
//   - it is the hash of an earlier line j (Genesis for j = 0): lines j+1..n
//     came after the head was recorded: inserted at j+1, with the count;
//   - with a seq S: S > n is truncated at n+1, S-n lines missing; S = n is
//     modified at n (the last line changed); S < n is modified at S (the
//     chain after S was rewritten);
//   - a bare hash that matches no line: truncated at n+1 (or the last line
//     was altered; only the seq form tells).
//
// Applied to single edits of a log written by Writer, with a seq:hash head:
// changing any byte of line k is malformed or modified at k (truncated at k
// if it hits the last newline); deleting line k is deleted at k (truncated
// at k if k was last); swapping k and k+1 is reordered at k; inserting a
// line as line k (a copy, a forgery with a right or wrong prev or seq) is
// inserted at k; cutting the file anywhere inside line k or just before it
// is truncated at k. FuzzTamper checks each of these on random logs. With a
// bare hash head every such edit is still detected, but an altered last
// line reads as truncated. Without a head, edits to the tail — the last line
// changed, lines removed or added at the end with a correct chain — are
// undetectable by construction.
//
// Line numbers are lines of the file as it is, 1-based. Verify keeps 32
// bytes per accepted line in memory (32 MB for a million lines) so that the
// rules can look back, and every line from the first bad one on.
//
// # Secrets
//
// The log must never hold key material. The writer cannot know what is
// secret, so the rig installs a redactor (Writer.SetRedactor) that rewrites
// each line before it is hashed and written; the chain then covers the
// redacted bytes, and the redactor's output is checked with the verifier's
// parser so redaction can never produce a line Verify rejects.
package eventlog
