#!/bin/sh
# plink-honest.sh: run one command with PuTTY's plink and report honestly what
# happened, as one result object (docs/result.schema.json) on stdout.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/plink-honest.sh'
# It reads its target from SSHRIG_* variables (docs/tool-contract.md).
#
# plink reads neither OpenSSH's known_hosts nor its keys: the host key is
# pinned with -hostkey (its SHA256 fingerprint, from SSHRIG_KNOWN_HOSTS by
# ssh-keygen), and the identity converted to PuTTY's format with puttygen.
# plink exits with the command's exit status, and 1 when plink itself fails:
# a remote exit 1 and a dead connection look the same, so its exit status is
# never used to classify. Its event log (-v) says what happened:
#   "Opened main channel"                     the exec request leaves next:
#                                             from here on the command may run
#   "Session sent command exit status N"      the result arrived
#   "Server refused to start a shell/command" the server refused to run it
# plink has no keepalive timeout of its own: a dead connection ends with the
# deadline (timeout), and the log says how far it got.

set -u

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
budget=$(( SSHRIG_DEADLINE_MS / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1
if ! puttygen "$SSHRIG_IDENTITY" -O private -o "$tmp/id.ppk" 2>"$tmp/log"; then
	cat "$tmp/log" >&2
	report local_failure never "cannot convert the identity for plink; nothing was sent"
	exit 0
fi
fp=$(ssh-keygen -l -E sha256 -f "$SSHRIG_KNOWN_HOSTS" | awk '{ print $2; exit }')
case $fp in
SHA256:*) ;;
*) report local_failure never "no host key to pin in SSHRIG_KNOWN_HOSTS; nothing was sent"; exit 0 ;;
esac

timeout -s KILL "$budget" plink -ssh -batch -v -noagent -T -x -a -hostkey "$fp" -i "$tmp/id.ppk" \
	-P "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" </dev/null >"$tmp/out" 2>"$tmp/log"
rc=$?
cat "$tmp/log" >&2
echo "plink-honest: plink exited $rc" >&2

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

log=$tmp/log
status=$(sed -n 's/^Session sent command exit status \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ -n "$status" ]; then
	if [ "$status" -eq 0 ] && ! contract_ok; then
		report malformed_response never "the remote command exited 0 but its answer breaks the $SSHRIG_OPERATION contract; nothing may be built on it"
	elif [ "$status" -eq 0 ]; then
		report succeeded never "the remote command exited 0"
	else
		report confirmed_failure never "the remote command exited $status"
	fi
elif grep -q 'exit signal\|exited on signal' "$log"; then
	report confirmed_failure never "the server reported the remote command killed by a signal"
elif grep -q 'Server refused to start a shell/command' "$log"; then
	report authorization_denied never "the server refused to run the command; nothing was run"
elif grep -q '^Opened main channel' "$log"; then
	report outcome_unknown reconcile_first "the command was sent and no exit status arrived (plink exited $rc); it may have run: reconcile before retrying"
elif grep -q 'Server refused to open main channel: Resource shortage' "$log"; then
	report rate_limited after_delay "the server refused the session for lack of resources; nothing was run"
elif grep -q 'No supported authentication methods\|Server refused our key' "$log"; then
	report authentication_failed never "the server rejected the key; nothing was run"
elif grep -q 'host key\|Host key' "$log" && grep -q 'FATAL ERROR.*[Hh]ost key' "$log"; then
	report local_failure never "the server's host key is not the pinned one; nothing was sent"
else
	report local_failure bounded "plink failed before sending the command (exit $rc); nothing ran"
fi
exit 0
