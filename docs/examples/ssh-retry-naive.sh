#!/bin/sh
# ssh-retry-naive.sh: a wrapper around OpenSSH's ssh that retries whenever ssh
# itself fails (exit 255), as many tools do: "the connection dropped, so run
# it again". After a drop while the command may be running, that second run
# is blind: the first may have done the work. sshrig catches it:
#
#   sshrig run --server-faults --cases 'reboot.*' --tool 'exec:docs/examples/ssh-retry-naive.sh'
#
# fails reboot.started, reboot.output and reboot.finished with blind_retry,
# the ledger showing two starts. Compare ssh-reconcile-honest.sh.

set -u
end=$(( $(date +%s) + ${SSHRIG_DEADLINE_MS:-5000} / 1000 - 1 ))
attempt=0
while :; do
	attempt=$(( attempt + 1 ))
	left=$(( end - $(date +%s) ))
	[ "$left" -ge 1 ] || left=1
	timeout -s KILL "$left" ssh -F /dev/null -n -T -a -x \
		-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
		-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
		-o StrictHostKeyChecking=yes -o CheckHostIP=no \
		-o ConnectTimeout=1 -o ServerAliveInterval=1 -o ServerAliveCountMax=1 \
		-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" >/dev/null 2>&1
	rc=$?
	# 255: ssh failed, not the command. Try again while there is time.
	if [ "$rc" -ne 255 ] || [ "$(date +%s)" -ge "$end" ]; then
		break
	fi
	sleep 0.5
done
echo "ssh-retry-naive: $attempt attempt(s), ssh exited $rc" >&2
if [ "$rc" -eq 0 ]; then
	printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s","message":"done after %d attempt(s)"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$attempt"
elif [ "$rc" -eq 255 ] || [ "$rc" -eq 137 ]; then
	printf '{"ok":false,"category":"outcome_unknown","operation":"%s","retry":"reconcile_first","correlation_id":"%s","message":"ssh kept failing (%d attempts)"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$attempt"
else
	printf '{"ok":false,"category":"confirmed_failure","operation":"%s","retry":"never","correlation_id":"%s","message":"the command exited %d"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$rc"
fi
