#!/bin/sh
# upload-honest.sh [-r REMOTE] sftp|scp|exec [SCP-OPTIONS]: upload the command
# as a script with OpenSSH's sftp or scp, or as an exec request of its own
# (`ssh HOST 'cat > FILE'`, the script on stdin), run it with ssh (sh FILE),
# and report honestly what happened, as one result object
# (docs/result.schema.json) on stdout. Deploy tools often work this way: the
# script travels as a file, so nothing about it depends on remote quoting.
# scp speaks SFTP by default (OpenSSH 9); `upload-honest.sh scp -O` copies in
# the legacy mode, which runs scp -t on the server.
#
# By default the remote file is the attempt's own and is removed after the
# run. With -r REMOTE it has that fixed name (job.sh, /tmp/job.sh, ...) and
# stays, as tools written quickly do: the name is the same every time, as it
# may be on a host of the tool's own.
#
# sftp-honest.sh, scp-honest.sh, scp-legacy-honest.sh, sftp-fixed-honest.sh,
# sftp-tmp-honest.sh and twoexec-fixed-honest.sh are this script with their
# copier and name chosen.
#
# It reads its target from SSHRIG_* variables (docs/tool-contract.md).
#
# What each step can tell:
#   - The upload runs nothing of the command (in scp's legacy mode it runs
#     scp -t, by exec cat: each only writes the file). If it fails, however
#     late, the command has not run: local_failure, and a retry is safe (the
#     file may be left half-written; the next upload replaces it). An upload
#     by exec counts only once its exit status 0 arrived: without it the
#     file may be short.
#   - The run is one exec request. From "Sending command" in ssh's debug log
#     on, the command may run remotely; only "Exit status N" says how it
#     ended. ssh's own exit status cannot tell a remote 255 from ssh's own
#     failure, so it is never used to classify.

set -u
fixed=
if [ "${1:-}" = -r ]; then
	fixed=${2:-}
	shift 2 || true
	case "$fixed" in
	'' | *[!A-Za-z0-9./_-]*)
		echo "upload-honest.sh: REMOTE must be a plain path (A-Z a-z 0-9 . / _ -)" >&2
		exit 2
		;;
	esac
fi
copier=${1:-}
case "$copier" in
sftp | scp | exec) shift ;;
*)
	echo "usage: upload-honest.sh [-r REMOTE] sftp|scp|exec [SCP-OPTIONS]" >&2
	exit 2
	;;
esac
scp_mode="$*" # scp: -O for the legacy protocol

json() { # escape a string for JSON (backslash, quote, control characters)
	printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037'
}
report() { # category retry message
	ok=false
	[ "$1" = succeeded ] && ok=true
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$ok" "$1" "$(json "${SSHRIG_OPERATION:-}")" "$2" "$(json "${SSHRIG_CORRELATION_ID:-}")" "$(json "$3")"
}

for v in SSHRIG_HOST SSHRIG_PORT SSHRIG_USER SSHRIG_IDENTITY SSHRIG_KNOWN_HOSTS SSHRIG_CORRELATION_ID SSHRIG_OPERATION SSHRIG_COMMAND SSHRIG_DEADLINE_MS; do
	eval "val=\${$v:-}"
	if [ -z "$val" ]; then
		report local_failure never "missing $v; nothing was sent"
		exit 2
	fi
done

tmp=$(mktemp -d) || { report local_failure bounded "cannot create a temporary directory; nothing was sent"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$SSHRIG_COMMAND" >"$tmp/job.sh"
# The remote name is the attempt's own, so two attempts never share a file
# (and the run removes it), or the fixed one (which stays).
remote="sshrig-job-$(printf '%s' "$SSHRIG_CORRELATION_ID" | tr -cd 'A-Za-z0-9._-').sh"
run="sh ./$remote; s=\$?; rm -f ./$remote; exit \$s"
if [ -n "$fixed" ]; then
	remote=$fixed
	run="sh $remote"
fi

# The whole attempt must end within the deadline the caller gave: keep a
# second for reporting; each step gets what is left. ServerAliveInterval and
# ServerAliveCountMax end a session whose server stopped answering (a
# blackholed connection) after about 3 s.
end=$(( $(date +%s) + SSHRIG_DEADLINE_MS / 1000 - 1 ))
left() { l=$(( end - $(date +%s) )); [ "$l" -ge 1 ] || l=1; echo "$l"; }
set -- -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o UpdateHostKeys=no \
	-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
	-o ControlMaster=no -o ControlPath=none -o User="$SSHRIG_USER"

# Why a step failed before anything ran, from ssh's log ($1).
refused() {
	if grep -q 'Permission denied' "$1"; then
		report authentication_failed never "the server rejected the key; nothing was run"
	elif grep -q 'Host key verification failed' "$1"; then
		report local_failure never "the server's host key does not match known_hosts; nothing was sent"
	elif grep -q 'open failed: resource.shortage' "$1"; then
		report rate_limited after_delay "the server refused the session for lack of resources; nothing was run"
	elif grep -q 'exec request failed on channel' "$1"; then
		report authorization_denied never "the server refused to run the command; nothing was run"
	else
		report local_failure bounded "$2"
	fi
}

# exit_status LOG: the exit status ssh's debug log recorded, or nothing.
exit_status() { sed -n 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$1" | tail -n 1; }

# Step 1: the upload. sftp -b stops at the first command that fails; scp
# takes a host name with a colon only in brackets.
case "$copier" in
sftp)
	printf 'put %s %s\n' "$tmp/job.sh" "$remote" >"$tmp/batch"
	timeout -s KILL "$(left)" sftp -v -b "$tmp/batch" -P "$SSHRIG_PORT" "$@" "$SSHRIG_HOST" >/dev/null 2>"$tmp/upload.log"
	;;
scp)
	# shellcheck disable=SC2086 # scp_mode is a list of options
	timeout -s KILL "$(left)" scp -v $scp_mode -P "$SSHRIG_PORT" "$@" "$tmp/job.sh" "$SSHRIG_HOST:$remote" >/dev/null 2>"$tmp/upload.log"
	;;
exec)
	timeout -s KILL "$(left)" ssh -v -T -a -x "$@" -p "$SSHRIG_PORT" "$SSHRIG_HOST" \
		"cat > $remote" <"$tmp/job.sh" >/dev/null 2>"$tmp/upload.log"
	;;
esac
rc=$?
uploaded=false
if [ "$copier" = exec ]; then
	[ "$(exit_status "$tmp/upload.log")" = 0 ] && uploaded=true
else
	[ "$rc" -eq 0 ] && uploaded=true
fi
cat "$tmp/upload.log" >&2
echo "upload-honest: $copier exited $rc" >&2
if [ "$uploaded" != true ]; then
	refused "$tmp/upload.log" "the upload to $remote failed ($copier exited $rc); nothing ran"
	exit 0
fi

# Step 2: the run.
timeout -s KILL "$(left)" ssh -v -n -T -a -x "$@" -p "$SSHRIG_PORT" "$SSHRIG_HOST" \
	"$run" >"$tmp/out" 2>"$tmp/ssh.log"
rc=$?
cat "$tmp/ssh.log" >&2
echo "upload-honest: ssh exited $rc" >&2

# An answer is used only if it meets the operation's contract. create_record
# must print exactly one record with a string id (docs/tool-contract.md).
contract_ok() {
	case "$SSHRIG_OPERATION" in
	create_record)
		[ "$(wc -l <"$tmp/out")" -eq 1 ] &&
			grep -Eq '^\{"records":\[\{"id":"[^"\\]+","status":"created"\}\]\}$' "$tmp/out" ;;
	*) true ;;
	esac
}

log=$tmp/ssh.log
status=$(exit_status "$log")
if [ -n "$status" ]; then
	if [ "$status" -eq 0 ] && ! contract_ok; then
		report malformed_response never "the script exited 0 but its answer breaks the $SSHRIG_OPERATION contract; nothing may be built on it"
	elif [ "$status" -eq 0 ]; then
		report succeeded never "the script at $remote exited 0"
	else
		report confirmed_failure never "the script at $remote exited $status"
	fi
elif grep -q 'rtype exit-signal' "$log"; then
	report confirmed_failure never "the server reported the script killed by a signal"
elif grep -q 'exec request failed on channel' "$log"; then
	report authorization_denied never "the server refused to run the script; nothing was run"
elif grep -q '^debug1: Sending command: ' "$log"; then
	report outcome_unknown reconcile_first "the script was uploaded to $remote and the request to run it sent, and no exit status arrived (ssh exited $rc); it may have run: reconcile before retrying"
else
	refused "$log" "the script was uploaded to $remote but ssh failed before sending the request to run it (exit $rc); nothing ran"
fi
exit 0
