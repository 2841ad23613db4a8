#!/bin/sh
# sftp-cleanup-naive.sh: upload the command as a script with sftp, run it with
# ssh, then remove it with a second ssh (rm -f), as deploy scripts do, with a
# defect common in them: every step must succeed, so a cleanup that fails
# makes the whole operation "failed" (confirmed_failure, retry bounded), though
# the script's own exit status had arrived and said how it ended. An agent
# told "failed" runs a command that succeeded a second time. The upload and
# the run are read as sftp-honest.sh reads them. sshrig catches it at the
# cleanup's step cases (moment cleanup-step):
#
#   sshrig run --tool 'exec:docs/examples/sftp-cleanup-naive.sh' --cases 'step.*'  # exits 1
#
# fails with category/unsafe_category where the cleanup's connection was cut
# (step.12-session, step.13-exec) and passes the upload's and the run's
# steps. Compare sftp-honest.sh, which removes the script in the run's own
# exec.

set -u
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
end=$(( $(date +%s) + ${SSHRIG_DEADLINE_MS:-5000} / 1000 - 1 ))
left() { l=$(( end - $(date +%s) )); [ "$l" -ge 1 ] || l=1; echo "$l"; }
set -- -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o ConnectTimeout=2 \
	-o ServerAliveInterval=1 -o ServerAliveCountMax=2 -o User="$SSHRIG_USER"
result() { # ok category retry message
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$1" "$2" "$SSHRIG_OPERATION" "$3" "$SSHRIG_CORRELATION_ID" "$4"
}
job="job-$SSHRIG_CORRELATION_ID.sh"
printf '%s\n' "$SSHRIG_COMMAND" >"$tmp/job.sh"
echo "put $tmp/job.sh $job" >"$tmp/batch"
if ! timeout -s KILL "$(left)" sftp -q -b "$tmp/batch" -P "$SSHRIG_PORT" "$@" "$SSHRIG_HOST" >/dev/null 2>&1; then
	result false local_failure bounded "the upload failed; nothing ran"
	exit 0
fi
# The run: ssh's log says whether the request left and how the script ended.
# It leaves the cleanup two seconds of the deadline: an ssh connection on a
# busy machine can take more than one.
run_for=$(( $(left) - 2 ))
[ "$run_for" -ge 1 ] || run_for=1
timeout -s KILL "$run_for" ssh -v -n "$@" -p "$SSHRIG_PORT" "$SSHRIG_HOST" "sh $job" >/dev/null 2>"$tmp/ssh.log"
status=$(sed -n 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$tmp/ssh.log" | tail -n 1)
if [ "$status" = 0 ]; then
	ok=true category=succeeded retry=never message="the script exited 0"
elif [ -n "$status" ]; then
	ok=false category=confirmed_failure retry=never message="the script exited $status"
elif grep -q '^debug1: Sending command: ' "$tmp/ssh.log"; then
	ok=false category=outcome_unknown retry=reconcile_first message="the script may have run: reconcile before retrying"
else
	ok=false category=local_failure retry=bounded message="ssh failed before the request to run the script left; nothing ran"
fi
# The cleanup: the script is not left behind.
timeout -s KILL "$(left)" ssh -n "$@" -p "$SSHRIG_PORT" "$SSHRIG_HOST" "rm -f $job" >/dev/null 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
	result false confirmed_failure bounded "the deploy failed at its cleanup (ssh exited $rc); run it again"
else
	result "$ok" "$category" "$retry" "$message"
fi
