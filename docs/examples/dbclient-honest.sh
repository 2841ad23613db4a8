#!/bin/sh
# dbclient-honest.sh: run one command with Dropbear's dbclient and report
# honestly what happened, as one result object (docs/result.schema.json) on
# stdout.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/dbclient-honest.sh'
# It reads its target from SSHRIG_* variables (docs/tool-contract.md).
#
# dbclient reads host keys only from ~/.ssh/known_hosts, by host name (not
# [host]:port), and wants its own key format: the wrapper gives it a HOME of
# its own with the pinned key, and converts the identity with dropbearconvert.
# Without -y an unknown or changed host key stops it.
# dbclient has no debug log. What it says: "Connection to ... exited: WHY"
# when it failed itself; otherwise its exit status is the command's. Where
# it failed in the conversation it does not say, apart from a connection
# that was never made ("Connect failed") and a rejected key ("No auth
# methods could be used"): any other failure may have come after the command
# was sent, so it is outcome_unknown. So is a hang ended by the deadline.
# Two refusals dbclient never reports (docs/real-clients.md): an exec request
# the server refused (dbclient asks for no reply, and waits), and a session
# the server rejected (dbclient prints "Connection ... closed." and exits 0).
# The second is recognised by that line and an empty conversation.

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
mkdir -p "$tmp/home/.ssh"
sed 's/^\[\([^]]*\)\]:[0-9]* /\1 /' "$SSHRIG_KNOWN_HOSTS" >"$tmp/home/.ssh/known_hosts"
if ! dropbearconvert openssh dropbear "$SSHRIG_IDENTITY" "$tmp/id" >/dev/null 2>"$tmp/err"; then
	cat "$tmp/err" >&2
	report local_failure never "cannot convert the identity for dbclient; nothing was sent"
	exit 0
fi

# -K 1: a keepalive every second; a server that stops answering ends the
# connection ("Keepalive timeout") well within the deadline.
HOME=$tmp/home timeout -s KILL "$budget" dbclient -T -K 1 -i "$tmp/id" \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/err" >&2
echo "dbclient-honest: dbclient exited $rc" >&2

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

why=$(sed -n 's/^dbclient: Connection to .* exited: //p' "$tmp/err" | tail -n 1)
if [ "$rc" -gt 128 ]; then
	report outcome_unknown reconcile_first "dbclient was killed (exit $rc) and says nothing of how far it got; the command may have run: reconcile before retrying"
elif grep -q 'host key mismatch' "$tmp/err"; then
	# dbclient ends its "exited:" line there and says why on the next ones.
	report local_failure never "the server's host key is not the one in known_hosts; nothing was sent"
elif [ -n "$why" ]; then
	case $why in
	"Connect failed"*) report local_failure bounded "dbclient could not connect ($why); nothing was sent" ;;
	"No auth methods could be used"*) report authentication_failed never "the server rejected the key; nothing was run" ;;
	*"ost key"*) report local_failure never "the server's host key is not the pinned one ($why); nothing was sent" ;;
	*) report outcome_unknown reconcile_first "dbclient failed ($why); the command may have been sent: reconcile before retrying" ;;
	esac
elif [ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ] && grep -q '^Connection to .* closed\.' "$tmp/err"; then
	report local_failure bounded "the server closed the session before the command ran (dbclient does not say why); nothing ran"
elif [ "$rc" -eq 0 ] && ! contract_ok; then
	report malformed_response never "the remote command exited 0 but its answer breaks the $SSHRIG_OPERATION contract; nothing may be built on it"
elif [ "$rc" -eq 0 ]; then
	report succeeded never "the remote command exited 0"
else
	report confirmed_failure never "the remote command exited $rc"
fi
exit 0
