#!/bin/sh
# ssh-jump-honest.sh: run one command on a host behind a jump host (a
# bastion) with OpenSSH's ssh -J, and report honestly what happened, as one
# result object (docs/result.schema.json) on stdout.
#
# Use it as a tool under test:
#   sshrig run --jump --tool 'exec:docs/examples/ssh-jump-honest.sh'
# It reads its target from SSHRIG_* variables (docs/tool-contract.md):
# SSHRIG_JUMP is the jump host (user@host:port), SSHRIG_HOST and SSHRIG_PORT
# the target as the jump host reaches it.
#
# It reads ssh's debug log as ssh-honest.sh does (see there): "Sending
# command" means the command may run, "Exit status N" is a result, and
# anything between is unknown.
#
# What the jump host changes:
#   - ssh -J starts a second ssh for the jump host (ssh -W host:port). That
#     one reads no -o option of the command line, only the config file:
#     known_hosts, the key and BatchMode go in a config file given with -F,
#     which both read. With -o alone the jump host's key is checked
#     against ~/.ssh/known_hosts, and every attempt fails.
#   - ServerAliveInterval keeps both hops honest: the target's keepalives
#     travel through the jump host's tunnel, so a silent jump host and a
#     silent target both end the session within about 3 s. Without it a
#     target that dies behind a live jump host leaves ssh waiting forever:
#     the jump host still answers, the tunnel inside it does not.
#   - A target the jump host cannot reach ends before "Sending command":
#     nothing ran, whichever hop failed.

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

for v in SSHRIG_JUMP SSHRIG_HOST SSHRIG_PORT SSHRIG_USER SSHRIG_IDENTITY SSHRIG_KNOWN_HOSTS SSHRIG_CORRELATION_ID SSHRIG_OPERATION SSHRIG_COMMAND SSHRIG_DEADLINE_MS; do
	eval "val=\${$v:-}"
	if [ -z "$val" ]; then
		report local_failure never "missing $v; nothing was sent"
		exit 2
	fi
done

log=$(mktemp) || { report local_failure bounded "cannot create a temporary file; nothing was sent"; exit 1; }
out=$(mktemp) || { rm -f "$log"; report local_failure bounded "cannot create a temporary file; nothing was sent"; exit 1; }
cfg=$(mktemp) || { rm -f "$log" "$out"; report local_failure bounded "cannot create a temporary file; nothing was sent"; exit 1; }
trap 'rm -f "$log" "$out" "$cfg"' EXIT

# One config for both ssh processes: the jump host's reads nothing else.
cat >"$cfg" <<EOF
Host *
	BatchMode yes
	IdentitiesOnly yes
	IdentityFile "$SSHRIG_IDENTITY"
	UserKnownHostsFile "$SSHRIG_KNOWN_HOSTS"
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	CheckHostIP no
	UpdateHostKeys no
	ConnectTimeout 2
	ServerAliveInterval 1
	ServerAliveCountMax 2
	ControlMaster no
	ControlPath none
EOF

# The whole attempt must end within the deadline the caller gave: keep a
# second for reporting. ServerAliveInterval/CountMax end a session whose
# server stopped answering (a blackholed connection) after about 3 s.
budget=$(( SSHRIG_DEADLINE_MS / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1

timeout -s KILL "$budget" ssh -v -F "$cfg" -J "$SSHRIG_JUMP" -n -T -a -x \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" >"$out" 2>"$log"
rc=$?
# Diagnostics for people go to stderr; the agent reads only stdout.
cat "$log" >&2
echo "ssh-jump-honest: ssh exited $rc" >&2

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
