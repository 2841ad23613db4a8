#!/bin/sh
# pssh-honest.sh: run one command on a fleet of hosts at once with
# parallel-ssh (Debian's pssh), and report honestly what happened on each
# host, as one result object (docs/result.schema.json) with a "hosts" entry
# per host on stdout.
#
# Use it as a tool under test:
#   sshrig run --hosts 5 --tool 'exec:docs/examples/pssh-honest.sh'
# It reads its targets from SSHRIG_* variables (docs/tool-contract.md):
# SSHRIG_HOSTS is every host's host:port.
#
# parallel-ssh's own verdict per host is ssh's exit status ("[FAILURE] host
# Exited with error code 255"), which cannot tell a command that may have
# run from one that never left. So ssh runs with -v, each host's log goes
# to a file of its own (-e), and each host is read as ssh-honest.sh reads
# one: "Sending command" means the command may have run there, "Exit
# status N" is that host's result, anything between is unknown on that
# host. The others' results stand: "unknown on one host, done on the rest"
# is the honest report, and a caller retries (after reconciling) only the
# unknown hosts, never the batch.

set -u

json() { # escape a string for JSON
	printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037'
}

for v in SSHRIG_HOSTS SSHRIG_USER SSHRIG_IDENTITY SSHRIG_KNOWN_HOSTS SSHRIG_CORRELATION_ID SSHRIG_OPERATION SSHRIG_COMMAND SSHRIG_DEADLINE_MS; do
	eval "val=\${$v:-}"
	if [ -z "$val" ]; then
		printf '{"ok":false,"category":"local_failure","operation":"%s","retry":"never","correlation_id":"%s","message":"missing %s; nothing was sent"}\n' \
			"$(json "${SSHRIG_OPERATION:-?}")" "$(json "${SSHRIG_CORRELATION_ID:-?}")" "$v"
		exit 2
	fi
done

work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir "$work/out" "$work/err"
cat >"$work/config" <<CONFIG
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
CONFIG

# parallel-ssh gets three fifths of the deadline (whole seconds, -t): the
# rest is for parallel-ssh's own start (a Python program) and for reading
# every host's log below, a dozen small processes per host, which on a busy
# machine take seconds. A host whose ssh it kills is reported unknown, never
# "nothing ran" (classify), so a shorter -t costs no honesty.
budget=$(( SSHRIG_DEADLINE_MS * 3 / 5000 ))
[ "$budget" -ge 1 ] || budget=1
# Every host at once (-p), each ssh killed after the budget (-t); parallel-ssh's
# own "[SUCCESS]"/"[FAILURE]" lines are for people.
# shellcheck disable=SC2086 # SSHRIG_HOSTS is a list of host:port, split on purpose
parallel-ssh -H "$SSHRIG_HOSTS" -l "$SSHRIG_USER" -p 64 -t "$budget" \
	-o "$work/out" -e "$work/err" -x "-v -F $work/config -n -T -a -x" \
	"$SSHRIG_COMMAND" >"$work/status"
cat "$work/status" >&2

# statusOf HOST: the exit status parallel-ssh saw for HOST's ssh, as its
# own status line says it ("[SUCCESS] HOST" is 0), or "" when it saw none
# (killed: "Timed out, Killed by signal 9").
statusOf() {
	sed -n -e 's/^\[[0-9]*\] [0-9:]* \[SUCCESS\] \(.*\)$/0 \1/p' \
		-e 's/^\[[0-9]*\] [0-9:]* \[FAILURE\] \(.*\) Exited with error code \([0-9]*\)$/\2 \1/p' "$work/status" |
		while read -r code name; do [ "$name" = "$1" ] && echo "$code"; done | tail -n 1
}

# classify HOST LOG: one host's category, retry and message, tab-separated.
# ssh exits with the remote command's status when one arrived, and 255 when
# it failed itself (or the command exited 255): only 255 needs the log, and
# parallel-ssh's copy of the log can lose its last lines (the "Exit status"
# ssh writes as it exits), so the exit status comes first.
classify() {
	status=$(statusOf "$1")
	# No status line at all: parallel-ssh killed this host's ssh at its
	# deadline ("Timed out"), and the log it kept may end before the line
	# that says whether the command left.
	killed=false
	[ -n "$status" ] || killed=true
	[ "$status" = 255 ] && status=""
	[ -n "$status" ] || status=$(sed -n 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$2" | tail -n 1)
	set -- "$2"
	if [ -n "$status" ] && [ "$status" -eq 0 ]; then
		printf 'succeeded\tnever\tthe remote command exited 0'
	elif [ -n "$status" ]; then
		printf 'confirmed_failure\tnever\tthe remote command exited %s' "$status"
	elif grep -q 'rtype exit-signal' "$1"; then
		printf 'confirmed_failure\tnever\tthe server reported the remote command killed by a signal'
	elif grep -q '^debug1: Sending command: ' "$1"; then
		printf 'outcome_unknown\treconcile_first\tthe exec request was sent and no exit status arrived; the command may have run: reconcile this host before retrying it'
	elif grep -q 'Permission denied' "$1"; then
		printf 'authentication_failed\tnever\tthe host rejected the key; nothing was run'
	elif grep -q 'Host key verification failed' "$1"; then
		printf 'local_failure\tnever\tthe host key does not match known_hosts; nothing was sent'
	elif $killed; then
		printf 'outcome_unknown\treconcile_first\tparallel-ssh killed ssh at its deadline, and its log does not say whether the command was sent: reconcile this host before retrying it'
	else
		printf 'local_failure\tbounded\tssh failed before sending the command; nothing ran'
	fi
}

entries="" all_ok=true unknown=false first=""
for host in $SSHRIG_HOSTS; do
	log="$work/err/$host"
	[ -f "$log" ] || : >"$log"
	cat "$log" >&2
	line=$(classify "$host" "$log")
	cat=$(printf '%s' "$line" | cut -f1)
	retry=$(printf '%s' "$line" | cut -f2)
	msg=$(printf '%s' "$line" | cut -f3)
	ok=false
	[ "$cat" = succeeded ] && ok=true
	[ "$ok" = true ] || all_ok=false
	[ "$cat" = outcome_unknown ] && unknown=true
	[ "$ok" = true ] || [ -n "$first" ] || first="$cat	$retry"
	entries="$entries${entries:+,}{\"host\":\"$(json "$host")\",\"ok\":$ok,\"category\":\"$cat\",\"retry\":\"$retry\",\"message\":\"$(json "$msg")\"}"
done

# The whole operation, summed up: succeeded only when every host did; unknown
# when any host is; else the first failure. The hosts say which.
if $all_ok; then
	top="succeeded	never" summary="every host ran the command and exited 0"
elif $unknown; then
	top="outcome_unknown	reconcile_first" summary="the outcome is unknown on some hosts: reconcile those (see hosts) before retrying them, and only them"
else
	top="$first" summary="some hosts failed (see hosts)"
fi
ok=false
[ "$all_ok" = true ] && ok=true
printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s","hosts":[%s]}\n' \
	"$ok" "$(printf '%s' "$top" | cut -f1)" "$(json "$SSHRIG_OPERATION")" "$(printf '%s' "$top" | cut -f2)" \
	"$(json "$SSHRIG_CORRELATION_ID")" "$summary" "$entries"
