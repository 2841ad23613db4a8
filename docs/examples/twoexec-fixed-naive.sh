#!/bin/sh
# twoexec-fixed-naive.sh: twoexec-fixed-honest.sh's two steps, the way many
# deploy scripts are written: copy the command to job.sh with
# `ssh HOST 'cat > job.sh'`, run it with `ssh HOST 'sh job.sh'`, and take the
# second ssh's exit status for the outcome. 0 is succeeded, anything else is
# confirmed_failure; so a connection that dies after job.sh started (ssh's
# 255) is "the job failed", and a planner may run it again.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/twoexec-fixed-naive.sh'
set -u
report() { # ok category retry message
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$1" "$2" "$SSHRIG_OPERATION" "$3" "$SSHRIG_CORRELATION_ID" "$4"
}
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 2000 ))
[ "$budget" -ge 1 ] || budget=1
run() { # remote command; stdin is passed on
	timeout -s KILL "$budget" ssh -F /dev/null -T -a -x \
		-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
		-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
		-o StrictHostKeyChecking=yes -o CheckHostIP=no \
		-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=1 \
		-o ControlMaster=no -o ControlPath=none \
		-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$1"
}
if ! printf '%s\n' "$SSHRIG_COMMAND" | run 'cat > job.sh'; then
	report false local_failure bounded "could not copy job.sh; nothing ran"
	exit 0
fi
run 'sh job.sh' </dev/null >/dev/null
rc=$?
if [ "$rc" -eq 0 ]; then
	report true succeeded never "done"
else
	report false confirmed_failure never "the job failed (exit $rc)"
fi
