#!/bin/sh
# ssh-tt-naive.sh: a wrapper around OpenSSH's ssh -tt (a forced terminal) with
# the most common defect.
# It treats every non-zero exit of ssh as the remote side saying the work
# failed (confirmed_failure). After a cut while the command may be running,
# that claim is unfounded: the caller cannot know, and an agent told
# "failed" will likely run the command again. sshrig catches it:
#
#   sshrig run --tool 'exec:docs/examples/ssh-tt-naive.sh'
#
# fails with unsafe category findings at the exec, started, output and
# finished moments. Compare ssh-tt-honest.sh.

set -u
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1
timeout -s KILL "$budget" ssh -F /dev/null -tt -a -x \
	-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no \
	-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" </dev/null >/dev/null
rc=$?
if [ "$rc" -eq 0 ]; then
	printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s","message":"done"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID"
else
	printf '{"ok":false,"category":"confirmed_failure","operation":"%s","retry":"never","correlation_id":"%s","message":"the command failed (exit %d)"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$rc"
fi
