#!/bin/sh
# controlmaster-honest.sh: run one command over an OpenSSH ControlMaster
# connection, as configuration tools do (ControlMaster=auto with
# ControlPersist: the first ssh becomes a master in the background, later ones
# are multiplexed over its connection), and report honestly what happened, as
# one result object (docs/result.schema.json) on stdout. It probes the host
# first (uname -s), then runs the command, then stops the master (ssh -O exit).
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/controlmaster-honest.sh'
# It reads its target from SSHRIG_* variables (docs/tool-contract.md).
#
# Where the facts are: the master owns the TCP connection and sends every
# request, so its log (-E, kept by the first ssh) says what left
# ("Sending command: ..."); the multiplexed ssh only talks to the master, and
# its log (-vv) says when the master opened its session ("master session id":
# the command has been sent) and what came back ("Received exit status from
# master N"), or that the master died ("Control master terminated
# unexpectedly"). A killed helper is the master: it owns the socket. Neither
# ssh's exit status is used to classify: a remote 255 and a dead master both
# make ssh exit 255.

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

tmp=$(mktemp -d) || { report local_failure bounded "cannot create a temporary directory; nothing was sent"; exit 1; }

# The whole attempt must end within the deadline the caller gave: keep a
# second for reporting; each step gets what is left. ServerAliveInterval and
# ServerAliveCountMax end a session whose server stopped answering (a
# blackholed connection) after about 3 s.
end=$(( $(date +%s) + SSHRIG_DEADLINE_MS / 1000 - 1 ))
left() { l=$(( end - $(date +%s) )); [ "$l" -ge 1 ] || l=1; echo "$l"; }
set -- -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o UpdateHostKeys=no \
	-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
	-o User="$SSHRIG_USER"

# Why a step failed before anything ran, from ssh's log ($1).
refused() {
	if grep -q 'Permission denied' "$1"; then
		report authentication_failed never "the server rejected the key; nothing was run"
	elif grep -q 'Host key verification failed' "$1"; then
		report local_failure never "the server's host key does not match known_hosts; nothing was sent"
	elif grep -q 'open failed: resource.shortage' "$1"; then
		report rate_limited after_delay "the server refused the session for lack of resources; nothing was run"
	elif grep -q 'exec request failed on channel\|channel_input_status_confirm: type 100 ' "$1"; then
		report authorization_denied never "the server refused to run the command; nothing was run"
	else
		report local_failure bounded "$2"
	fi
}

# Every ssh shares the master's socket; the master stays up to 10 s idle,
# and is stopped at the end in any case, once: a wedged master (stopped, as
# after a laptop's sleep) answers nothing, so the stop is given a second.
set -- "$@" -o ControlMaster=auto -o ControlPath="$tmp/cm" -o ControlPersist=10 -p "$SSHRIG_PORT"
stop_master() {
	[ -z "${stopped:-}" ] || return 0
	stopped=1
	timeout -s KILL 1 ssh "$@" -O exit "$SSHRIG_HOST" >/dev/null 2>&1
}
trap 'stop_master "$@"; rm -rf "$tmp"' EXIT

# Step 1: the probe, which starts the master. It runs nothing of the command.
timeout -s KILL "$(left)" ssh -vv -E "$tmp/master.log" -n -T -a -x "$@" "$SSHRIG_HOST" 'uname -s' >/dev/null 2>"$tmp/probe.err"
rc=$?
if [ "$rc" -ne 0 ]; then
	cat "$tmp/master.log" "$tmp/probe.err" >&2
	# A multiplexed session's errors reach its client's stderr.
	cat "$tmp/probe.err" >>"$tmp/master.log"
	refused "$tmp/master.log" "the probe failed (ssh exited $rc); the command was not sent"
	exit 0
fi
sent_before=$(grep -c '^debug1: Sending command: ' "$tmp/master.log")
# SSH_MSG_CHANNEL_FAILURE (100) answers a refused request: the master logs it.
refused_before=$(grep -c 'channel_input_status_confirm: type 100 ' "$tmp/master.log")

# Step 2: the command, multiplexed over the master's connection. A second
# of the budget stays for stopping the master.
step=$(( $(left) - 1 ))
[ "$step" -ge 1 ] || step=1
timeout -s KILL "$step" ssh -vv -E "$tmp/ssh.log" -n -T -a -x "$@" "$SSHRIG_HOST" "$SSHRIG_COMMAND" >"$tmp/out" 2>"$tmp/err"
rc=$?
stop_master "$@"
cat "$tmp/master.log" "$tmp/ssh.log" "$tmp/err" >&2
echo "controlmaster-honest: ssh exited $rc" >&2

# An answer is used only if it meets the operation's contract. create_record
# must print exactly one record with a string id (docs/tool-contract.md).
contract_ok() {
	case "$SSHRIG_OPERATION" in
	create_record)
		[ "$(wc -l <"$tmp/out")" -eq 1 ] &&
			grep -Eq '^\{"records":\[\{"id":"[^"\\]+","status":"created"\}\]\}$' "$tmp/out" ;;
	*) true ;;
	esac
}

log=$tmp/ssh.log
# The multiplexed ssh's own words; "Exit status N" if the master was gone and
# it connected by itself (ControlMaster=auto).
status=$(sed -n -e 's/^debug2: Received exit status from master \([0-9][0-9]*\).*/\1/p' \
	-e 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
sent_after=$(grep -c '^debug1: Sending command: ' "$tmp/master.log")
refused_after=$(grep -c 'channel_input_status_confirm: type 100 ' "$tmp/master.log")
if [ -n "$status" ]; then
	if [ "$status" -eq 0 ] && ! contract_ok; then
		report malformed_response never "the remote command exited 0 but its answer breaks the $SSHRIG_OPERATION contract; nothing may be built on it"
	elif [ "$status" -eq 0 ]; then
		report succeeded never "the remote command exited 0"
	else
		report confirmed_failure never "the remote command exited $status"
	fi
elif grep -q 'rtype exit-signal' "$tmp/master.log" "$log"; then
	report confirmed_failure never "the server reported the remote command killed by a signal"
elif [ "$refused_after" -gt "$refused_before" ] || grep -q 'exec request failed on channel' "$tmp/err"; then
	report authorization_denied never "the server refused to run the command; nothing was run"
elif [ "$sent_after" -gt "$sent_before" ] || grep -q 'master session id: \|^debug1: Sending command: ' "$log"; then
	report outcome_unknown reconcile_first "the command was sent over the master's connection and no exit status arrived (ssh exited $rc); it may have run: reconcile before retrying"
else
	refused "$log" "ssh failed before the command was sent (exit $rc); nothing ran"
fi
exit 0
