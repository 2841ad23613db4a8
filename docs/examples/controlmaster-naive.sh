#!/bin/sh
# controlmaster-naive.sh: probe (uname -s), then run the command over an
# OpenSSH ControlMaster connection, with a defect common where multiplexing
# is used: the multiplexed ssh exiting 255 is read as "the master connection
# was gone, so nothing was sent", a local failure that is safe to retry. But
# the master sends the command as soon as the session opens; when it dies
# after that, the command may be running. sshrig catches it:
#
#   sshrig run --tool 'exec:docs/examples/controlmaster-naive.sh' --cases 'started.*'  # exits 1
#
# fails with category/unsafe_category (and evidence/contradiction where the
# server saw the command start) wherever the command was cut (exec, started,
# output, finished). Compare controlmaster-honest.sh.

set -u
tmp=$(mktemp -d)
set -- -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o ConnectTimeout=2 \
	-o ServerAliveInterval=1 -o ServerAliveCountMax=2 -o User="$SSHRIG_USER" -p "$SSHRIG_PORT" \
	-o ControlMaster=auto -o ControlPath="$tmp/cm" -o ControlPersist=10
trap 'timeout -s KILL 2 ssh "$@" -O exit "$SSHRIG_HOST" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
result() { # ok category retry message
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$1" "$2" "$SSHRIG_OPERATION" "$3" "$SSHRIG_CORRELATION_ID" "$4"
}
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 2000 ))
if ! timeout -s KILL "$budget" ssh -n "$@" "$SSHRIG_HOST" 'uname -s' >/dev/null 2>&1; then
	result false local_failure bounded "the probe failed; nothing was run"
	exit 0
fi
timeout -s KILL "$budget" ssh -n "$@" "$SSHRIG_HOST" "$SSHRIG_COMMAND" >/dev/null
rc=$?
case $rc in
0) result true succeeded never "done" ;;
255 | 137) result false local_failure bounded "the connection to the host failed; nothing was run" ;;
*) result false confirmed_failure never "the command failed (exit $rc)" ;;
esac
