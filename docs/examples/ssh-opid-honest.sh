#!/bin/sh
# ssh-opid-honest.sh: run one command over OpenSSH's ssh under an operation
# id, and after a connection lost once the command was sent, send it again
# under the SAME id: the remote wrapper runs the work at most once and says
# when it did not run it again (docs/tool-contract.md, "Operation ids").
# Then report honestly, as one result object (docs/result.schema.json):
#
#   sshrig run --tool 'exec:docs/examples/ssh-opid-honest.sh'
#
# It reads ssh's debug log (-v) as ssh-honest.sh does: "Sending command"
# says the command may run remotely, "Exit status N" that a result arrived.
# A resend answered with the de-duplication notice ran nothing: the first
# attempt started the work, and how it ended is still unknown (reconcile
# first). A resend that ran the work (the first attempt never started it)
# and whose exit status arrived is the work's one result.

set -u

json() { # escape a string for JSON (backslash, quote, control characters)
	printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037'
}
report() { # category retry message
	ok=false
	[ "$1" = succeeded ] && ok=true
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","operation_id":"%s","message":"%s"}\n' \
		"$ok" "$1" "$(json "${SSHRIG_OPERATION:-}")" "$2" "$(json "${SSHRIG_CORRELATION_ID:-}")" "$op" "$(json "$3")"
}

# The operation id is made before anything leaves, one per operation, and
# goes with every send of this operation's command.
op=op-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')

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

# The whole attempt, resend included, must end within the deadline: keep a
# second for reporting, give the first send three fifths of the rest and the
# resend what is left. ServerAliveInterval/CountMax end a session whose
# server stopped answering (a blackholed connection).
total_ms=$(( SSHRIG_DEADLINE_MS - 1000 ))
[ "$total_ms" -ge 1000 ] || total_ms=1000
first_ms=$(( total_ms * 3 / 5 ))
resend_ms=$(( total_ms - first_ms ))
seconds() { printf '%d.%03d' $(( $1 / 1000 )) $(( $1 % 1000 )); }

send() { # budget_ms: one send of the command under the operation id
	timeout -s KILL "$(seconds "$1")" ssh -v -F /dev/null -n -T -a -x \
		-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
		-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
		-o StrictHostKeyChecking=yes -o CheckHostIP=no -o UpdateHostKeys=no \
		-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
		-o ControlMaster=no -o ControlPath=none \
		-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "SSHRIG_OPERATION_ID=$op $SSHRIG_COMMAND" >"$out" 2>"$log"
	rc=$?
	cat "$log" >&2 # diagnostics for people; the agent reads only stdout
	echo "ssh-opid-honest: ssh exited $rc" >&2
}

contract_ok() { # the answer meets the operation's contract (docs/tool-contract.md)
	case "$SSHRIG_OPERATION" in
	create_record)
		[ "$(wc -l < "$out")" -eq 1 ] &&
			grep -Eq '^\{"records":\[\{"id":"[^"\\]+","status":"created"\}\]\}$' "$out" ;;
	*) true ;;
	esac
}
exit_status() { sed -n 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1; }
report_status() { # status how: a result that arrived
	if [ "$1" -eq 0 ] && ! contract_ok; then
		report malformed_response never "the remote command exited 0 but its answer breaks the $SSHRIG_OPERATION contract; nothing may be built on it"
	elif [ "$1" -eq 0 ]; then
		report succeeded never "$2 exited 0"
	else
		report confirmed_failure never "$2 exited $1"
	fi
}

send "$first_ms"
status=$(exit_status)
if [ -n "$status" ]; then
	report_status "$status" "the remote command"
elif grep -q 'rtype exit-signal' "$log"; then
	report confirmed_failure never "the server reported the remote command killed by a signal"
elif grep -q 'exec request failed on channel' "$log"; then
	report authorization_denied never "the server refused to run the command; nothing was run"
elif grep -q '^debug1: Sending command: ' "$log"; then
	# The command may have run. A step sequence looks its record up
	# (SSHRIG_LOOKUP_COMMAND); this tool does not do step sequences, so
	# there it only says what it knows.
	if [ -n "${SSHRIG_LOOKUP_COMMAND:-}" ]; then
		report outcome_unknown reconcile_first "the exec request was sent under operation id $op and no exit status arrived; the command may have run: look it up before anything else"
		exit 0
	fi
	send "$resend_ms"
	status=$(exit_status)
	if grep -qF "sshrig: operation already started: $op;" "$log"; then
		report outcome_unknown reconcile_first "the connection was lost after the command was sent; sent again under operation id $op, the remote side did not run it again: the first send started it, and how it ended is unknown: reconcile before anything else"
	elif [ -n "$status" ]; then
		report_status "$status" "the first send never started the work; sent again under operation id $op, it ran once and"
	else
		report outcome_unknown reconcile_first "the connection was lost after the command was sent under operation id $op, and the resend under the same id brought no answer either; the work ran at most once: reconcile before anything else"
	fi
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
