#!/bin/sh
# pssh-batch-naive.sh: a fleet wrapper as people write it: run the command
# on every host with parallel-ssh, and when any host fails, run the whole
# batch again ("the network blipped"), then report the batch as one result.
# Two defects sshrig catches:
#
#   sshrig run --hosts 5 --tool 'exec:docs/examples/pssh-batch-naive.sh'
#
# - The retry runs the command again on every host, the ones where it had
#   completed too (blind_retry, named per host).
# - "The batch failed" is said of every host, the ones that succeeded too:
#   parallel-ssh's exit status is one number for the fleet (unsafe_category
#   per host). Compare pssh-honest.sh.

set -u
# Each attempt gets the whole deadline but a second (the retry then runs
# past it, where it runs at all).
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1
cfg=$(mktemp) || exit 1
trap 'rm -f "$cfg"' EXIT
cat >"$cfg" <<CONFIG
Host *
	BatchMode yes
	IdentitiesOnly yes
	IdentityFile "$SSHRIG_IDENTITY"
	UserKnownHostsFile "$SSHRIG_KNOWN_HOSTS"
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	ConnectTimeout 2
	ServerAliveInterval 1
	ServerAliveCountMax 2
CONFIG
batch() {
	parallel-ssh -H "$SSHRIG_HOSTS" -l "$SSHRIG_USER" -p 64 -t "$budget" -x "-F $cfg -n -T" "$SSHRIG_COMMAND" >&2
}
batch
rc=$?
if [ "$rc" -ne 0 ]; then
	batch # once more, for the whole fleet
	rc=$?
fi
if [ "$rc" -eq 0 ]; then
	printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s","message":"done on every host"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID"
else
	printf '{"ok":false,"category":"confirmed_failure","operation":"%s","retry":"never","correlation_id":"%s","message":"the batch failed (parallel-ssh exited %d)"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$rc"
fi
