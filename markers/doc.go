// Package markers owns the markers a remote command leaves behind: the
// wrapper that makes a POSIX shell command append a start marker to a ledger
// file before its work and a complete marker after it, and the parser that
// reads such ledgers back.
//
// The rig cuts SSH connections at exact moments. What the client saw is then
// not evidence of what happened remotely; the ledger is. A start marker
// proves the work was about to begin, a complete marker proves it ended and
// records its exit code, and several start markers for one id prove the
// command ran more than once (a blind retry); a dedup marker proves a
// command sent again with its operation id did not run the work again.
//
// # Wrapping
//
// [Wrap] turns a command into a script for /bin/sh -c. The command runs in a
// subshell so that its own exit, set -e or trailing comment cannot skip the
// complete marker, and the script exits with the command's exit code. If the
// start marker cannot be written the work does not run and the script exits
// with [ExitNoLedger]. When SSHRIG_GATE names a FIFO the script, once after
// writing the start marker and once after the work (before the complete
// marker), writes a line naming the gate, its id and its pid to that FIFO and
// waits for a line on a second FIFO (see [GateEnv]); the rig's SSH server
// holds both ends, so it learns exactly when each gate was reached, by
// whichever process of the tree it started, and decides when the script goes
// on. Elsewhere the gates do nothing. [Unwrap] recognises a script made by
// Wrap and recovers its parts.
//
// # Ledger grammar
//
// A ledger is a sequence of lines, each terminated by a newline (the last
// one may lack it, for example after a partial write):
//
//	line     = start | complete | dedup
//	start    = id SP "start" SP seconds SP pid [SP op]
//	complete = id SP "complete" SP exitcode SP seconds SP pid
//	dedup    = id SP "dedup" SP seconds SP pid SP op
//	op       = "op=" id     ; the operation id the run was given
//	id       = 1 to 128 of [A-Za-z0-9._:-], the first a letter or digit
//	seconds  = decimal Unix time in seconds, 0 to 253402300799 (year 9999),
//	           or "-" (NoClock) where the writing shell has no clock
//	pid      = decimal process id, 1 to 2147483647
//	exitcode = decimal 0 to 255
//	SP       = exactly one space
//
// Numbers are plain decimal digits without sign or leading zeros, which is
// what the wrapper writes; anything else is a sign of corruption. The
// wrapper takes the seconds from the shell's EPOCHSECONDS (bash 5 and later,
// busybox ash) and writes "-" where the shell has none (dash): asking date
// would cost two processes per command. The pid is
// that of the shell running the wrapper script, so a start and a complete
// marker from the same run carry the same pid.
//
// A ledger written before operation ids existed is read as it always was:
// the op field is optional and last, so a reader that takes a start marker's
// fourth field for its pid still does.
//
// # Operation ids
//
// A tool that lost its connection after sending a command cannot know
// whether the command ran; sending it again may run it twice. So a tool may
// give the wrapped script an operation id ([OperationIDEnv], set in front of
// the script by [WithOperationID]), the same each time it sends that
// operation's command. The script claims the id before its start marker,
// atomically, and records it there (op=); a run given an id already claimed
// for its marker id runs nothing, appends a dedup marker instead, says so on
// stderr ([DedupNotice]) and exits with [ExitDeduplicated]. The ledger then
// shows one start and one dedup per resend: the work ran once. A run
// without an operation id behaves exactly as before.
//
// A command one tool runs on many hosts at once (a fleet) is the same on
// every host: [WrapPerHost] wraps it so that its markers carry the id each
// host's environment gives it ([HostIDEnv]), which the rig's server sets to
// the id of the case the connection belongs to.
//
// [Parse] never fails on content: every line becomes either an [Entry] or a
// [LineError] with a specific reason, so a torn or garbled ledger is still
// read as far as it is readable.
package markers
