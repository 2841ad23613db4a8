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

// ExitDeduplicated is the exit code of a wrapped script given an operation
// id (OperationIDEnv) whose work an earlier run of the same marker id already
// started: it wrote a dedup marker instead of a start marker and did not run
// the work. Its stderr says so in one line (DedupNotice). 123 sits beside
// ExitNoLedger among the codes a wrapper keeps for itself, away from the
// codes a command commonly exits with.
const ExitDeduplicated = 123

// DedupNotice begins the line a de-duplicated run writes on stderr, followed
// by the operation id and the rest of the sentence: what a tool that re-sent
// the command reads to learn that the work was not run again.
const DedupNotice = "sshrig: operation already started: "

// OperationIDEnv names the operation id a tool gives a wrapped script: a
// shell variable the script reads, set by the tool in front of the script
// (WithOperationID) or in its environment. A run given an operation id
// claims it before its start marker, atomically (the shell's noclobber
// creates the claim file with O_EXCL), and records it in the start marker;
// a run given an id already claimed for its marker id writes a dedup marker
// and exits with ExitDeduplicated instead of running the work. So a tool
// that lost its connection may re-send the same command with the same id:
// the work runs at most once. An id that is not valid (ValidID) stops the
// script before it writes anything, with ExitNoLedger.
const OperationIDEnv = "SSHRIG_OPERATION_ID"

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
//
// The operation id costs a script without one a single test. With one, the
// claim is a redirection under set -C (noclobber: O_CREAT|O_EXCL in dash,
// bash and busybox ash) of the builtin true, a regular builtin, so that a
// failing redirection is a status, not the end of the shell; set -C is
// undone before anything else runs. Only when the claim fails does the
// script look whether the claim file is there: then the work was claimed
// before (a dedup), otherwise it cannot claim at all and does no work.
// Its length check is a pattern, not ${#…}: "{#" opens a comment to
// templating tools that pass commands through Jinja2 (Ansible's -a).
var (
	tooLongPattern  = strings.Repeat("?", MaxIDLen+1) + "*"
	scriptOperation = `if [ -n "${SSHRIG_OPERATION_ID:-}" ]; then` + "\n" +
		`case $SSHRIG_OPERATION_ID in [!A-Za-z0-9]*|*[!A-Za-z0-9._:-]*|` + tooLongPattern + `) false ;; esac || { echo "sshrig: operation id $SSHRIG_OPERATION_ID is not valid (1 to 128 of A-Z a-z 0-9 . _ : -, the first a letter or digit)" >&2; exit 125; }` + "\n" +
		`sshrig_claim=$sshrig_ledger.op.$sshrig_id.$SSHRIG_OPERATION_ID; set -C` + "\n" +
		`if true 2>/dev/null >"$sshrig_claim"; then set +C` + "\n" +
		`elif set +C; [ -f "$sshrig_claim" ]; then printf '%s dedup %s %s op=%s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" "$SSHRIG_OPERATION_ID" >>"$sshrig_ledger" || { echo "sshrig: cannot write dedup marker to $sshrig_ledger" >&2; exit 125; }; echo "` + DedupNotice + `$SSHRIG_OPERATION_ID; the work was not run again" >&2; exit 123` + "\n" +
		`else echo "sshrig: cannot claim operation $SSHRIG_OPERATION_ID at $sshrig_claim" >&2; exit 125; fi` + "\n" +
		"fi\n"
	scriptMiddle = scriptOperation +
		`printf '%s start %s %s%s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" "${SSHRIG_OPERATION_ID:+ op=$SSHRIG_OPERATION_ID}" >>"$sshrig_ledger" || { echo "sshrig: cannot write start marker to $sshrig_ledger" >&2; exit 125; }` + "\n" +
		`[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'start %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }` + "\n" +
		"(\n"
	scriptEnd = "\n)\n" +
		"sshrig_rc=$?\n" +
		`[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'done %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }` + "\n" +
		`printf '%s complete %s %s %s\n' "$sshrig_id" "$sshrig_rc" "${EPOCHSECONDS:--}" "$$" >>"$sshrig_ledger"` + "\n" +
		`exit "$sshrig_rc"` + "\n"
)

const (
	firstLinePrefix = "sshrig_id="
	ledgerAssign    = " sshrig_ledger="
	// operationAssign is what WithOperationID puts in front of a script.
	operationAssign = OperationIDEnv + "="
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
	// OperationID is the operation id a tool set in front of the script
	// (WithOperationID); "" when it set none there (it may still give one
	// in the script's environment, which only the markers then show).
	OperationID string
}

// WithOperationID returns script, a script made by Wrap or WrapPerHost, with
// the operation id op set in front of it, as a tool sends it when it wants
// the remote side to run the work at most once however often it sends the
// command (OperationIDEnv):
//
//	SSHRIG_OPERATION_ID=OP sshrig_id=ID sshrig_ledger='LEDGER'
//	...
//
// The first line stays a line of assignments, so the script is still one a
// POSIX shell runs as it is. op must be a valid id (ValidID); a tool makes
// it before anything leaves, one per operation, and sends the same one each
// time it sends that operation's command.
func WithOperationID(script, op string) (string, error) {
	if problem := idProblem(op); problem != "" {
		return "", fmt.Errorf("markers: operation id %s: %s", quoteForMessage(op), problem)
	}
	return operationAssign + op + " " + script, nil
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
// exits with command's exit code. Given an operation id (OperationIDEnv) the
// start marker ends in " op=OP", and a run whose operation id was claimed
// before appends "ID dedup SECONDS PID op=OP" instead and exits with
// [ExitDeduplicated] without running command. SECONDS is the shell's EPOCHSECONDS, or
// [NoClock] in a shell without it; the script starts no process of its own
// besides the subshell the command runs in. If the start marker cannot be written, the
// script prints a message on stderr and exits with [ExitNoLedger] without
// running command. See the package documentation for the gates.
//
// The script has exactly this shape, every line ending in a newline:
//
//	sshrig_id=ID sshrig_ledger='LEDGER'
//	if [ -n "${SSHRIG_OPERATION_ID:-}" ]; then
//	case $SSHRIG_OPERATION_ID in [!A-Za-z0-9]*|*[!A-Za-z0-9._:-]*|TOOLONG) false ;; esac || { echo "sshrig: operation id $SSHRIG_OPERATION_ID is not valid (1 to 128 of A-Z a-z 0-9 . _ : -, the first a letter or digit)" >&2; exit 125; }
//	sshrig_claim=$sshrig_ledger.op.$sshrig_id.$SSHRIG_OPERATION_ID; set -C
//	if true 2>/dev/null >"$sshrig_claim"; then set +C
//	elif set +C; [ -f "$sshrig_claim" ]; then printf '%s dedup %s %s op=%s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" "$SSHRIG_OPERATION_ID" >>"$sshrig_ledger" || { echo "sshrig: cannot write dedup marker to $sshrig_ledger" >&2; exit 125; }; echo "sshrig: operation already started: $SSHRIG_OPERATION_ID; the work was not run again" >&2; exit 123
//	else echo "sshrig: cannot claim operation $SSHRIG_OPERATION_ID at $sshrig_claim" >&2; exit 125; fi
//	fi
//	printf '%s start %s %s%s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" "${SSHRIG_OPERATION_ID:+ op=$SSHRIG_OPERATION_ID}" >>"$sshrig_ledger" || { echo "sshrig: cannot write start marker to $sshrig_ledger" >&2; exit 125; }
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
// works; COMMAND is inserted verbatim; TOOLONG stands for 129 "?" and a "*"
// (an operation id longer than MaxIDLen).
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

// Unwrap recognises a script produced by [Wrap] or [WrapPerHost], with or
// without an operation id set in front of it by [WithOperationID], and
// returns its parts. It returns false for anything else, including scripts
// that differ from such output only in whitespace. For every input Wrap
// accepts, Unwrap(Wrap(id, ledger, command)) returns Spec{id, ledger,
// command}, true, and with WithOperationID(…, op) around it, the same Spec
// with OperationID op.
func Unwrap(script string) (Spec, bool) {
	if rest, ok := strings.CutPrefix(script, operationAssign); ok {
		// Operation ids contain no spaces, so the first space ends it.
		op, wrapped, ok := strings.Cut(rest, " ")
		if !ok || idProblem(op) != "" || strings.HasPrefix(wrapped, operationAssign) {
			return Spec{}, false
		}
		spec, ok := Unwrap(wrapped)
		if !ok {
			return Spec{}, false
		}
		spec.OperationID = op
		return spec, true
	}
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
