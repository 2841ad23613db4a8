#!/bin/sh
# plink-naive.sh: run one command with PuTTY's plink, with the most common
# defect: plink's exit status is taken for the command's. plink exits 1 when
# it fails itself (FATAL ERROR), whatever the remote command did; after a cut
# while the command may be running, "failed" is unfounded and an agent told
# so will likely run it again. sshrig catches it:
#
#   sshrig run --tool 'exec:docs/examples/plink-naive.sh' --cases 'started.*'  # exits 1
#
# fails with category/unsafe_category wherever the connection died (before
# the command as after it). Compare plink-honest.sh.

set -u
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
puttygen "$SSHRIG_IDENTITY" -O private -o "$tmp/id.ppk" 2>/dev/null
fp=$(ssh-keygen -l -E sha256 -f "$SSHRIG_KNOWN_HOSTS" | awk '{ print $2; exit }')
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1
timeout -s KILL "$budget" plink -ssh -batch -noagent -T -hostkey "$fp" -i "$tmp/id.ppk" \
	-P "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" </dev/null >/dev/null
rc=$?
if [ "$rc" -eq 0 ]; then
	printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s","message":"done"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID"
else
	printf '{"ok":false,"category":"confirmed_failure","operation":"%s","retry":"never","correlation_id":"%s","message":"the command failed (exit %d)"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$rc"
fi
