#!/bin/sh
# upload4k.sh honest|naive: upload the command as a 4 KiB script (a header
# of comments, testdata/job-header.txt, then the command) with OpenSSH's
# sftp, run it with ssh (sh FILE), and report.
#
#   honest: an upload that failed ran nothing: local_failure.
#   naive:  the upload's exit status is not looked at, only the run's: a
#           script cut after its first bytes is still run, and a header
#           of comments runs and exits 0, so the tool says succeeded.
set -u
mode=${1:-}
here=$(dirname "$0")
set -- -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o ConnectTimeout=2 \
	-o ServerAliveInterval=1 -o ServerAliveCountMax=2 -o User="$SSHRIG_USER"
result() { # category retry message
	ok=false
	[ "$1" = succeeded ] && ok=true
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$ok" "$1" "$SSHRIG_OPERATION" "$2" "$SSHRIG_CORRELATION_ID" "$3"
}
end=$(($(date +%s) + SSHRIG_DEADLINE_MS / 1000 - 1))
left() {
	l=$((end - $(date +%s)))
	[ "$l" -ge 1 ] || l=1
	echo "$l"
}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
command_bytes=$(printf '%s\n' "$SSHRIG_COMMAND" | LC_ALL=C wc -c)
{
	head -c $((4095 - command_bytes)) "$here/job-header.txt"
	echo
	printf '%s\n' "$SSHRIG_COMMAND"
} >"$tmp/job.sh"
remote="job-$SSHRIG_CORRELATION_ID.sh"
echo "put $tmp/job.sh $remote" >"$tmp/batch"
timeout -s KILL "$(left)" sftp -q -b "$tmp/batch" -P "$SSHRIG_PORT" "$@" "$SSHRIG_HOST" >/dev/null
rc=$?
if [ "$rc" -ne 0 ] && [ "$mode" = honest ]; then
	result local_failure bounded "the upload failed (sftp exited $rc); nothing ran"
	exit 0
fi
timeout -s KILL "$(left)" ssh -n "$@" -p "$SSHRIG_PORT" "$SSHRIG_HOST" "sh $remote" >/dev/null
rc=$?
case $rc in
0) result succeeded never "uploaded and ran" ;;
255 | 137) result outcome_unknown reconcile_first "the run's connection failed (exit $rc); it may have run" ;;
*) result confirmed_failure never "the script failed (exit $rc)" ;;
esac
