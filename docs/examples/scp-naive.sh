#!/bin/sh
# scp-naive.sh: copy the command as a script with scp (SFTP mode), run it
# with ssh, with a defect common in automation: a run that ends with
# ssh's 255 is taken for a connection problem and retried, up to three runs.
# But the script may have started, or finished, before the connection died:
# the retry runs it again. sshrig catches it:
#
#   sshrig run --tool 'exec:docs/examples/scp-naive.sh' --cases 'started.*,finished.*'  # exits 1
#
# fails with no_blind_retry/blind_retry wherever the script had started and
# the cut made ssh exit 255. Compare scp-honest.sh.

set -u
set -- -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o ConnectTimeout=1 \
	-o ServerAliveInterval=1 -o ServerAliveCountMax=1 -o User="$SSHRIG_USER"
result() { # ok category retry message
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$1" "$2" "$SSHRIG_OPERATION" "$3" "$SSHRIG_CORRELATION_ID" "$4"
}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$SSHRIG_COMMAND" >"$tmp/job.sh"
if ! timeout -s KILL 2 scp -q -P "$SSHRIG_PORT" "$@" "$tmp/job.sh" "$SSHRIG_HOST:job-$SSHRIG_CORRELATION_ID.sh"; then
	result false local_failure bounded "the copy failed"
	exit 0
fi
for try in 1 2 3; do
	timeout -s KILL 1 ssh -n "$@" -p "$SSHRIG_PORT" "$SSHRIG_HOST" "sh job-$SSHRIG_CORRELATION_ID.sh" >/dev/null
	rc=$?
	[ "$rc" -eq 255 ] || [ "$rc" -eq 137 ] || break
	echo "scp-naive: run $try: connection problem (exit $rc), trying again" >&2
done
case $rc in
0) result true succeeded never "done" ;;
255 | 137) result false outcome_unknown reconcile_first "the connection kept failing" ;;
*) result false confirmed_failure never "the script failed (exit $rc)" ;;
esac
