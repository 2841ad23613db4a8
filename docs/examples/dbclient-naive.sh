#!/bin/sh
# dbclient-naive.sh: run one command with Dropbear's dbclient, with a defect
# easy to fall into with it: dbclient's exit status is taken for the
# command's. dbclient exits 1 when it fails itself, whatever the command did,
# and 0 when the server rejected the session before anything ran. sshrig
# catches it:
#
#   sshrig run --tool 'exec:docs/examples/dbclient-naive.sh' --cases 'started.*,c07.*'  # exits 1
#
# fails with category/unsafe_category wherever the connection died while the
# command may have been running, and with category/unexpected_category at
# c07.rate-limited ("succeeded", though nothing ran). Compare
# dbclient-honest.sh.

set -u
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/.ssh"
sed 's/^\[\([^]]*\)\]:[0-9]* /\1 /' "$SSHRIG_KNOWN_HOSTS" >"$tmp/.ssh/known_hosts"
dropbearconvert openssh dropbear "$SSHRIG_IDENTITY" "$tmp/id" >/dev/null 2>&1
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1
HOME=$tmp timeout -s KILL "$budget" dbclient -T -K 1 -i "$tmp/id" \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" </dev/null >/dev/null
rc=$?
if [ "$rc" -eq 0 ]; then
	printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s","message":"done"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID"
else
	printf '{"ok":false,"category":"confirmed_failure","operation":"%s","retry":"never","correlation_id":"%s","message":"the command failed (exit %d)"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$rc"
fi
