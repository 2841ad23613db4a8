#!/bin/sh
# ten-line-honest.sh: the tool contract in ten lines (docs/tool-contract.md); ssh's -v log says whether an exit status came back.
log=$(mktemp) && trap 'rm -f "$log"' EXIT
timeout -s KILL $((SSHRIG_DEADLINE_MS / 1000 - 1)) ssh -v -F /dev/null -n -T -o BatchMode=yes -o IdentitiesOnly=yes -i "$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o StrictHostKeyChecking=yes -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" >/dev/null 2>"$log"
case $(sed -n 's/^debug1: Exit status \([0-9]*\).*/\1/p' "$log") in
0) ok=true c=succeeded r=never ;; [0-9]*) ok=false c=confirmed_failure r=never ;; *) ok=false c=outcome_unknown r=reconcile_first ;;
esac # no exit status: the command may have run, or not; only reading the remote state can tell
printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s"}\n' "$ok" "$c" "$SSHRIG_OPERATION" "$r" "$SSHRIG_CORRELATION_ID"
