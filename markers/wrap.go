package markers

import (
	"errors"
	"fmt"
	"strings"
)

// ExitNoLedger is the exit code of a wrapped script that could not append
// its start marker to the ledger. The work has not run in that case: a run
// that leaves no trace in the ledger would be indistinguishable from a run
// that never reached the remote side, so the wrapper refuses to do it.
// 125 is the conventional "the wrapper itself failed" code (as used by env,
// nohup and timeout), distinct from 126/127 (cannot execute, not found) and
// from 128+n (killed by signal n).
const ExitNoLedger = 125

// GateEnv is the environment variable that turns on the wrapper's gates. When
// it names a FIFO, a wrapped script writes one line to it right after its
// start marker ("start ID PID") and again right after the work ends, before
// its complete marker ("done ID PID"), and each time waits until it reads a
// line from the FIFO named by the same path plus [GateAckSuffix]. PID is the
// pid of the shell running the script, the pid its markers carry.
//
// The gate is a conversation rather than a signal so that whoever holds the
// FIFO sees it however deep in a process tree the script runs (a shell fed
// on stdin, a file uploaded and run with sh), and so that nothing can resume
// the script before the gate's reader has seen it. When the variable is
// unset, empty or names anything but a FIFO, the gates do nothing.
const GateEnv = "SSHRIG_GATE"

// GateAckSuffix is appended to the gate FIFO's path to name the FIFO the
// script reads its go-ahead from.
const GateAckSuffix = ".go"

// Gate lines, as a wrapped script writes them to the gate FIFO.
const (
	GateStart = "start" // after the start marker, before the work
	GateDone  = "done"  // after the work, before the complete marker
)

// The fixed parts of a wrapped script. The command goes between scriptMiddle
// and scriptEnd, on its own lines, inside a subshell: the command's own exit,
// set -e or trailing "# comment" then only ends the subshell, and the
// complete marker is still written. The subshell's status is the command's
// exit code, which the script passes on as its own.
//
// $$ is the pid of the shell running the script (in the subshell too), so
// both markers and both gate lines carry the same pid.
//
// The time comes from the shell's own clock, EPOCHSECONDS (bash 5 and
// later, busybox ash), or is [NoClock] where the shell has none (dash,
// Debian's /bin/sh): asking date would cost two processes per command, more
// than the rest of the wrapper and of the rig's own work on a case together.
const (
	scriptMiddle = `printf '%s start %s %s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" >>"$sshrig_ledger" || { echo "sshrig: cannot write start marker to $sshrig_ledger" >&2; exit 125; }` + "\n" +
		`[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'start %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }` + "\n" +
		"(\n"
	scriptEnd = "\n)\n" +
		"sshrig_rc=$?\n" +
		`[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'done %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }` + "\n" +
		`printf '%s complete %s %s %s\n' "$sshrig_id" "$sshrig_rc" "${EPOCHSECONDS:--}" "$$" >>"$sshrig_ledger"` + "\n" +
		`exit "$sshrig_rc"` + "\n"
	firstLinePrefix = "sshrig_id="
	ledgerAssign    = " sshrig_ledger="
)

// Spec is what a wrapped script is made of: the marker id, the ledger path
// and the command that does the work.
type Spec struct {
	ID      string // "" for a per-host script (PerHost)
	Ledger  string
	Command string
	// PerHost: the script takes its marker id from HostIDEnv where it
	// runs (WrapPerHost), so one script run on many hosts marks each
	// host's run with that host's id.
	PerHost bool
}

// HostIDEnv is the environment variable a per-host script (WrapPerHost)
// reads its marker id from. The rig's server sets it, for every command it
// runs, to the id of the case the command's connection belongs to: each
// host of a fleet is a case of its own.
const HostIDEnv = "SSHRIG_HOST_ID"

// perHostID is what a per-host script assigns to sshrig_id: the host's id,
// and where there is none the shell stops before the start marker
// (${VAR:?} ends a non-interactive shell), so a run that cannot be told
// apart from another host's is never marked.
const perHostID = `"${` + HostIDEnv + `:?}"`

// WrapPerHost is Wrap for a command one tool runs on many hosts at once (a
// fleet: parallel-ssh sends the same command to every host): the script is
// the same for every host, and its markers carry the id each host's
// environment gives it in HostIDEnv. Its errors are Wrap's, but for the id.
func WrapPerHost(ledger, command string) (string, error) {
	script, err := Wrap("per-host", ledger, command)
	if err != nil {
		return "", err
	}
	return firstLinePrefix + perHostID + strings.TrimPrefix(script, firstLinePrefix+"per-host"), nil
}

// Wrap returns a script for /bin/sh -c that appends "ID start SECONDS PID"
// to ledger, runs command, appends "ID complete EXITCODE SECONDS PID" and
// exits with command's exit code. SECONDS is the shell's EPOCHSECONDS, or
// [NoClock] in a shell without it; the script starts no process of its own
// besides the subshell the command runs in. If the start marker cannot be written, the
// script prints a message on stderr and exits with [ExitNoLedger] without
// running command. See the package documentation for the gates.
//
// The script has exactly this shape, every line ending in a newline:
//
//	sshrig_id=ID sshrig_ledger='LEDGER'
//	printf '%s start %s %s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" >>"$sshrig_ledger" || { echo "sshrig: cannot write start marker to $sshrig_ledger" >&2; exit 125; }
//	[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'start %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }
//	(
//	COMMAND
//	)
//	sshrig_rc=$?
//	[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'done %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }
//	printf '%s complete %s %s %s\n' "$sshrig_id" "$sshrig_rc" "${EPOCHSECONDS:--}" "$$" >>"$sshrig_ledger"
//	exit "$sshrig_rc"
//
// ID needs no quoting (see [ValidID]); LEDGER is single-quoted, so any path
// works; COMMAND is inserted verbatim.
//
// Wrap returns an error for an invalid id, an empty ledger path, a ledger
// path containing a newline or NUL byte, a command containing a NUL byte
// (shells cannot carry one), and a command with nothing to run (empty, or
// only blanks and comments), because "(" followed by ")" is a shell syntax
// error that would surface only after the start marker was written.
//
// Wrap cannot check the command's shell syntax. A command that is not
// valid on its own (an unterminated quote or here-document, a trailing "&&",
// an unbalanced ")") breaks the script after the start marker is written:
// the shell exits with a syntax error (status 2) and no complete marker.
func Wrap(id, ledger, command string) (string, error) {
	if err := ValidID(id); err != nil {
		return "", err
	}
	switch {
	case ledger == "":
		return "", errors.New("markers: empty ledger path")
	case strings.ContainsAny(ledger, "\n\x00"):
		return "", fmt.Errorf("markers: ledger path %s contains a newline or NUL byte", quoteForMessage(ledger))
	case strings.ContainsRune(command, 0):
		return "", fmt.Errorf("markers: command %s contains a NUL byte, which no shell can carry", quoteForMessage(command))
	case !hasSomethingToRun(command):
		return "", fmt.Errorf("markers: command %s has nothing to run (it is empty or only blanks and comments); the wrapper's subshell would be a syntax error", quoteForMessage(command))
	}
	var b strings.Builder
	b.Grow(len(firstLinePrefix) + len(id) + len(ledgerAssign) + len(ledger) + 3 + len(scriptMiddle) + len(command) + len(scriptEnd))
	b.WriteString(firstLinePrefix)
	b.WriteString(id)
	b.WriteString(ledgerAssign)
	b.WriteString(singleQuote(ledger))
	b.WriteString("\n")
	b.WriteString(scriptMiddle)
	b.WriteString(command)
	b.WriteString(scriptEnd)
	return b.String(), nil
}

// hasSomethingToRun reports whether command has a line that is neither blank
// nor a comment. If it has none, every line is blank or a comment: the first
// such line cannot be inside a quote or here-document (nothing came before
// it), and a comment cannot continue onto the next line, so by induction the
// whole command is comments and the subshell around it would be empty.
// Only space and tab are blanks to a POSIX shell.
func hasSomethingToRun(command string) bool {
	for line := range strings.SplitSeq(command, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && trimmed[0] != '#' {
			return true
		}
	}
	return false
}

// singleQuote quotes s for a POSIX shell. Inside single quotes every byte
// is literal except the single quote itself, so each one is written as four
// characters: a quote closing the quoted part, a backslash-escaped quote, and
// a quote reopening it.
func singleQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Quote quotes s for a POSIX shell, as Wrap quotes the ledger's path: the
// rig's one shell-quoting helper.
func Quote(s string) string { return singleQuote(s) }

// Unwrap recognises a script produced by [Wrap] and returns its parts. It
// returns false for anything else, including scripts that differ from Wrap's
// output only in whitespace. For every input Wrap accepts,
// Unwrap(Wrap(id, ledger, command)) returns Spec{id, ledger, command}, true.
func Unwrap(script string) (Spec, bool) {
	firstLine, rest, ok := strings.Cut(script, "\n")
	if !ok {
		return Spec{}, false
	}
	assignments, ok := strings.CutPrefix(firstLine, firstLinePrefix)
	if !ok {
		return Spec{}, false
	}
	// Ids contain no spaces, so the first ledgerAssign ends the id.
	id, quotedLedger, ok := strings.Cut(assignments, ledgerAssign)
	if !ok || len(quotedLedger) < 2 || quotedLedger[0] != '\'' || quotedLedger[len(quotedLedger)-1] != '\'' {
		return Spec{}, false
	}
	ledger := strings.ReplaceAll(quotedLedger[1:len(quotedLedger)-1], `'\''`, "'")
	if len(rest) < len(scriptMiddle)+len(scriptEnd) || !strings.HasPrefix(rest, scriptMiddle) || !strings.HasSuffix(rest, scriptEnd) {
		return Spec{}, false
	}
	spec := Spec{ID: id, Ledger: ledger, Command: rest[len(scriptMiddle) : len(rest)-len(scriptEnd)]}
	// The pieces were cut out leniently; wrapping them again and comparing
	// is what makes the recognition exact (it rejects, for example, a ledger
	// with a stray quote, or an id Wrap would refuse).
	var rewrapped string
	var err error
	if id == perHostID {
		spec.ID, spec.PerHost = "", true
		rewrapped, err = WrapPerHost(spec.Ledger, spec.Command)
	} else {
		rewrapped, err = Wrap(spec.ID, spec.Ledger, spec.Command)
	}
	if err != nil || rewrapped != script {
		return Spec{}, false
	}
	return spec, true
}
