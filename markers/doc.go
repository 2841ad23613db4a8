// Package markers owns the markers a remote command leaves behind: the
// wrapper that makes a POSIX shell command append a start marker to a ledger
// file before its work and a complete marker after it, and the parser that
// reads such ledgers back.
//
// The rig cuts SSH connections at exact moments. What the client saw is then
// not evidence of what happened remotely; the ledger is. A start marker
// proves the work was about to begin, a complete marker proves it ended and
// records its exit code, and several start markers for one id prove the
// command ran more than once (a blind retry).
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
//	line     = start | complete
//	start    = id SP "start" SP seconds SP pid
//	complete = id SP "complete" SP exitcode SP seconds SP pid
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
// A command one tool runs on many hosts at once (a fleet) is the same on
// every host: [WrapPerHost] wraps it so that its markers carry the id each
// host's environment gives it ([HostIDEnv]), which the rig's server sets to
// the id of the case the connection belongs to.
//
// [Parse] never fails on content: every line becomes either an [Entry] or a
// [LineError] with a specific reason, so a torn or garbled ledger is still
// read as far as it is readable.
package markers
