#!/bin/sh
# ssh-tt-honest.sh: run one command over OpenSSH's ssh with a forced terminal
# (ssh -tt, as much automation does) and report honestly what
# happened, as one result object (docs/result.schema.json) on stdout.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/ssh-tt-honest.sh'
# It reads its target from SSHRIG_* variables (docs/tool-contract.md).
#
# What ssh's exit status can and cannot tell:
#   - ssh exits with the remote command's exit status when it received one.
#   - ssh exits 255 when ssh itself failed: no connection, a rejected key, a
#     host key mismatch, a dead connection (ServerAliveInterval), ...
#   - The remote-255 ambiguity: a remote command that exits 255 makes ssh exit
#     255 too. The exit status alone cannot tell "the command ran and returned
#     255" from "ssh failed, maybe before, maybe after the command started".
#   - A killed ssh (SIGKILL, a crash) exits by signal: it says nothing at all
#     about the remote side.
# So this wrapper never classifies by ssh's exit status. It reads ssh's own
# debug log (-v), which records each step as it happens:
#   "Sending command: ..."   the exec request is about to leave: from here
#                            on, the command may run remotely
#   "Exit status N"          the server's exit status arrived: a result
#   "rtype exit-signal"      the server said the command died by a signal
# A log without "Exit status" after "Sending command" means the outcome is
# unknown: reconcile (read the remote state) before any retry.

set -u

json() { # escape a string for JSON (backslash, quote, control characters)
	printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037'
}
report() { # category retry message
	ok=false
	[ "$1" = succeeded ] && ok=true
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$ok" "$1" "$(json "${SSHRIG_OPERATION:-}")" "$2" "$(json "${SSHRIG_CORRELATION_ID:-}")" "$(json "$3")"
}

for v in SSHRIG_HOST SSHRIG_PORT SSHRIG_USER SSHRIG_IDENTITY SSHRIG_KNOWN_HOSTS SSHRIG_CORRELATION_ID SSHRIG_OPERATION SSHRIG_COMMAND SSHRIG_DEADLINE_MS; do
	eval "val=\${$v:-}"
	if [ -z "$val" ]; then
		report local_failure never "missing $v; nothing was sent"
		exit 2
	fi
done

log=$(mktemp) || { report local_failure bounded "cannot create a temporary file; nothing was sent"; exit 1; }
out=$(mktemp) || { rm -f "$log"; report local_failure bounded "cannot create a temporary file; nothing was sent"; exit 1; }
trap 'rm -f "$log" "$out"' EXIT

# The whole attempt must end within the deadline the caller gave: keep a
# second for reporting. ServerAliveInterval/CountMax end a session whose
# server stopped answering (a blackholed connection) after about 3 s.
budget=$(( SSHRIG_DEADLINE_MS / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1

timeout -s KILL "$budget" ssh -v -F /dev/null -tt -a -x \
	-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o UpdateHostKeys=no \
	-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
	-o ControlMaster=no -o ControlPath=none \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" </dev/null >"$out" 2>"$log"
rc=$?
# A terminal ends lines with CR LF; the answer is the text without the CRs.
tr -d '\r' <"$out" >"$out.lf" && mv "$out.lf" "$out"
# Diagnostics for people go to stderr; the agent reads only stdout.
cat "$log" >&2
echo "ssh-tt-honest: ssh exited $rc" >&2

# An answer is used only if it meets the operation's contract. create_record
# must print exactly one record with a string id (docs/tool-contract.md); a
# parser that accepts the bytes does not prove the answer is usable.
contract_ok() {
	case "$SSHRIG_OPERATION" in
	create_record)
		[ "$(wc -l < "$out")" -eq 1 ] &&
			grep -Eq '^\{"records":\[\{"id":"[^"\\]+","status":"created"\}\]\}$' "$out" ;;
	*) true ;;
	esac
}

status=$(sed -n 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ -n "$status" ]; then
	if [ "$status" -eq 0 ] && ! contract_ok; then
		report malformed_response never "the remote command exited 0 but its answer breaks the $SSHRIG_OPERATION contract; nothing may be built on it"
	elif [ "$status" -eq 0 ]; then
		report succeeded never "the remote command exited 0"
	else
		report confirmed_failure never "the remote command exited $status"
	fi
elif grep -q 'rtype exit-signal' "$log"; then
	report confirmed_failure never "the server reported the remote command killed by a signal"
elif grep -q 'exec request failed on channel' "$log"; then
	report authorization_denied never "the server refused to run the command; nothing was run"
elif grep -q '^debug1: Sending command: ' "$log"; then
	report outcome_unknown reconcile_first "the exec request was sent and no exit status arrived (ssh exited $rc); the command may have run: reconcile before retrying"
elif grep -q 'Permission denied' "$log"; then
	report authentication_failed never "the server rejected the key; nothing was run"
elif grep -q 'Host key verification failed' "$log"; then
	report local_failure never "the server's host key does not match known_hosts; nothing was sent"
elif grep -q 'open failed: resource.shortage' "$log"; then
	report rate_limited after_delay "the server refused the session for lack of resources; nothing was run"
else
	report local_failure bounded "ssh failed before sending the command (exit $rc); nothing ran"
fi
exit 0
