#!/bin/sh
# controlmaster-reuse-naive.sh: run one command over an OpenSSH master
# connection the way long-lived tools keep one (ssh -M -N -f, then every
# command through its socket), with two common defects:
#   - no deadline of its own around the multiplexed ssh or the master's stop:
#     it trusts ServerAliveInterval, but only the master sends keepalives, so
#     a wedged master (stopped, as after a laptop's sleep) makes it hang;
#   - ssh's 255 read as the host saying the work failed (confirmed_failure).
#
#   sshrig run --cases 'step.*' --tool 'exec:docs/examples/controlmaster-reuse-naive.sh'
#
# fails step.NN-session.wedge-helper with hang. Compare controlmaster-honest.sh.

set -u
tmp=$(mktemp -d)
set -- -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o ConnectTimeout=2 \
	-o ServerAliveInterval=1 -o ServerAliveCountMax=2 -o User="$SSHRIG_USER" -p "$SSHRIG_PORT" \
	-o ControlPath="$tmp/cm"
trap 'ssh "$@" -O exit "$SSHRIG_HOST" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
result() { # ok category retry message
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$1" "$2" "$SSHRIG_OPERATION" "$3" "$SSHRIG_CORRELATION_ID" "$4"
}
# The master, in the background once authenticated, kept for later commands.
if ! ssh -M -N -f -o ControlPersist=yes "$@" "$SSHRIG_HOST" 2>/dev/null; then
	result false local_failure bounded "could not connect; nothing was run"
	exit 0
fi
# What the host is, then the command: each a session on the master's
# connection.
if ! ssh -n -o ControlMaster=no "$@" "$SSHRIG_HOST" 'uname -s' >/dev/null 2>&1; then
	result false local_failure bounded "the host did not answer; nothing was run"
	exit 0
fi
ssh -n -o ControlMaster=no "$@" "$SSHRIG_HOST" "$SSHRIG_COMMAND" >/dev/null 2>&1
rc=$?
case $rc in
0) result true succeeded never "done" ;;
*) result false confirmed_failure never "the command failed (exit $rc)" ;;
esac
