#!/bin/sh
# scp-legacy-naive.sh: copy the command as a script with scp -O (the legacy
# protocol: scp -t runs on the server), run it with ssh, with the most common
# defect: every non-zero exit of scp or ssh is the remote side saying the
# work failed (confirmed_failure). A copy that failed ran nothing
# (local_failure); a run cut while the script may be running has no known
# outcome. An agent told "failed" will likely run it again. sshrig catches it:
#
#   sshrig run --tool 'exec:docs/examples/scp-legacy-naive.sh' --cases 'handshake.*,started.*'  # exits 1
#
# fails with category/unsafe_category at the moments before the copy ended
# (accept, handshake, auth, channel) and where the run was cut (exec,
# started, output, finished). Compare scp-legacy-honest.sh.

set -u
set -- -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o ConnectTimeout=2 \
	-o ServerAliveInterval=1 -o ServerAliveCountMax=2 -o User="$SSHRIG_USER"
result() { # ok category message
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"never","correlation_id":"%s","message":"%s"}\n' \
		"$1" "$2" "$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$3"
}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$SSHRIG_COMMAND" >"$tmp/job.sh"
timeout -s KILL 2 scp -q -O -P "$SSHRIG_PORT" "$@" "$tmp/job.sh" "$SSHRIG_HOST:job-$SSHRIG_CORRELATION_ID.sh" &&
	timeout -s KILL 2 ssh -n "$@" -p "$SSHRIG_PORT" "$SSHRIG_HOST" "sh job-$SSHRIG_CORRELATION_ID.sh" >/dev/null
rc=$?
if [ "$rc" -eq 0 ]; then
	result true succeeded "done"
else
	result false confirmed_failure "the command failed (exit $rc)"
fi
