#!/bin/sh
# module-honest.sh: run the command inside a remote wrapper that reports the
# command's status as JSON on its last line ({"rc": N}) and exits 1 on any
# failure, as Ansible's modules do, and report honestly what happened, as one
# result object (docs/result.schema.json) on stdout.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/module-honest.sh'
# It reads its target from SSHRIG_* variables (docs/tool-contract.md).
#
# The status is read from the wrapper's JSON, not from ssh's exit status:
# that is the wrapper's own (1 for any failure). The wrapper prints the
# command's output only once the command ended, then the status line, so a
# complete status line is the command's result even when the connection died
# before the session's exit status arrived. Without one, ssh's debug log (-v)
# says how far the exchange got, as in ssh-honest.sh:
#   "Sending command: ..."   the exec request is about to leave: from here
#                            on, the command may run remotely
#   "Exit status N"          the wrapper's exit status arrived
#   "rtype exit-signal"      the server said the wrapper died by a signal
# A log without either after "Sending command", and no status line, means the
# outcome is unknown: reconcile (read the remote state) before any retry.

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
answer=$(mktemp) || { rm -f "$log" "$out"; report local_failure bounded "cannot create a temporary file; nothing was sent"; exit 1; }
trap 'rm -f "$log" "$out" "$answer"' EXIT

# The remote wrapper: the command runs in sh -c, its output is held until it
# ends (a newline is added if it lacks one), then the status line follows.
quoted=$(printf '%s' "$SSHRIG_COMMAND" | sed "s/'/'\\\\''/g")
remote="out=\$(sh -c '$quoted'; s=\$?; printf x; exit \$s); rc=\$?; out=\${out%x}
printf '%s' \"\$out\"
case \$out in '' | *'
') ;; *) echo ;; esac
printf '{\"rc\": %d}\n' \"\$rc\"
[ \"\$rc\" -eq 0 ] || exit 1"

# The whole attempt must end within the deadline the caller gave: keep a
# second for reporting. ServerAliveInterval/CountMax end a session whose
# server stopped answering (a blackholed connection) after about 3 s.
budget=$(( SSHRIG_DEADLINE_MS / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1

timeout -s KILL "$budget" ssh -v -F /dev/null -n -T -a -x \
	-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o UpdateHostKeys=no \
	-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
	-o ControlMaster=no -o ControlPath=none \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$remote" >"$out" 2>"$log"
rc=$?
# Diagnostics for people go to stderr; the agent reads only stdout.
cat "$log" >&2
echo "module-honest: ssh exited $rc" >&2

# The status line is the last line, whole (with its newline); the answer is
# every line before it.
module_rc=
if [ -s "$out" ] && [ -z "$(tail -c 1 "$out")" ]; then
	module_rc=$(tail -n 1 "$out" | sed -n 's/^{"rc": \([0-9][0-9]*\)}$/\1/p')
	[ -z "$module_rc" ] || sed '$d' "$out" >"$answer"
fi

# An answer is used only if it meets the operation's contract. create_record
# must print exactly one record with a string id (docs/tool-contract.md).
contract_ok() {
	case "$SSHRIG_OPERATION" in
	create_record)
		[ "$(wc -l < "$answer")" -eq 1 ] &&
			grep -Eq '^\{"records":\[\{"id":"[^"\\]+","status":"created"\}\]\}$' "$answer" ;;
	*) true ;;
	esac
}

if [ -n "$module_rc" ]; then
	if [ "$module_rc" -eq 0 ] && ! contract_ok; then
		report malformed_response never "the command exited 0 but its answer breaks the $SSHRIG_OPERATION contract; nothing may be built on it"
	elif [ "$module_rc" -eq 0 ]; then
		report succeeded never "the wrapper says the command exited 0"
	else
		report confirmed_failure never "the wrapper says the command exited $module_rc"
	fi
elif grep -q '^debug1: Exit status [0-9]' "$log"; then # ssh logs "Exit status -1" when none arrived
	report confirmed_failure never "the wrapper ended without a status line; its exit status arrived, so it ran and failed"
elif grep -q 'rtype exit-signal' "$log"; then
	report confirmed_failure never "the server reported the wrapper killed by a signal before it printed a status"
elif grep -q 'exec request failed on channel' "$log"; then
	report authorization_denied never "the server refused to run the command; nothing was run"
elif grep -q '^debug1: Sending command: ' "$log"; then
	report outcome_unknown reconcile_first "the exec request was sent and neither a status line nor an exit status arrived (ssh exited $rc); the command may have run: reconcile before retrying"
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
