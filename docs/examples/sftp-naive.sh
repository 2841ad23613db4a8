#!/bin/sh
# sftp-naive.sh: upload the command as a script with sftp, run it with ssh,
# with a defect common in deploy tools: once the upload succeeded, a run
# that ends with ssh's 255 ("the connection dropped") is reported as
# succeeded, because "the script is on the server and was started". It may
# not have started, or may have failed; the caller cannot know. sshrig
# catches it:
#
#   sshrig run --tool 'exec:docs/examples/sftp-naive.sh' --cases 'exec.*,started.*'  # exits 1
#
# fails with category/unsafe_category wherever the run was cut (exec,
# started, output, finished), and where its connection was cut before the
# exec left (step case step.09-session: nothing ran). The same reading of
# ssh's exit status makes a blackholed run, which its timeout ends by killing
# ssh (137), the script's failure: unsafe too. Compare sftp-honest.sh.

set -u
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 2000 ))
[ "$budget" -ge 1 ] || budget=1
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
echo "put $tmp/job.sh job-$SSHRIG_CORRELATION_ID.sh" >"$tmp/batch"
if ! timeout -s KILL "$budget" sftp -q -b "$tmp/batch" -P "$SSHRIG_PORT" "$@" "$SSHRIG_HOST" >/dev/null; then
	result false local_failure "the upload failed"
	exit 0
fi
timeout -s KILL "$budget" ssh -n "$@" -p "$SSHRIG_PORT" "$SSHRIG_HOST" "sh job-$SSHRIG_CORRELATION_ID.sh" >/dev/null
rc=$?
case $rc in
0 | 255) result true succeeded "uploaded and started" ;;
*) result false confirmed_failure "the script failed (exit $rc)" ;;
esac
