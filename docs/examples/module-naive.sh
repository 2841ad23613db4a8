#!/bin/sh
# module-naive.sh: module-honest.sh's remote wrapper (the command's status as
# {"rc": N} on the last line, exit 1 for any failure), read the way quick
# scripts read it: ssh's exit status decides, and the status line only says
# which failure. A connection that died after the command started makes ssh
# exit 255, which this script takes for the module's failure: the caller is
# told "failed" of a command that may have run (category/unsafe_category at
# started.*, output.*). Compare module-honest.sh.
#
#   sshrig run --tool 'exec:docs/examples/module-naive.sh' --cases 'started.*,none.*'  # exits 1
set -u
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1
quoted=$(printf '%s' "$SSHRIG_COMMAND" | sed "s/'/'\\\\''/g")
remote="out=\$(sh -c '$quoted'; s=\$?; printf x; exit \$s); rc=\$?; out=\${out%x}
printf '%s' \"\$out\"
case \$out in '' | *'
') ;; *) echo ;; esac
printf '{\"rc\": %d}\n' \"\$rc\"
[ \"\$rc\" -eq 0 ] || exit 1"
out=$(timeout -s KILL "$budget" ssh -F /dev/null -n -T -a -x \
	-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no \
	-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$remote")
rc=$?
module_rc=$(printf '%s\n' "$out" | tail -n 1 | sed -n 's/^{"rc": \([0-9][0-9]*\)}$/\1/p')
if [ "$rc" -eq 0 ]; then
	printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s","message":"done"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID"
else
	printf '{"ok":false,"category":"confirmed_failure","operation":"%s","retry":"never","correlation_id":"%s","message":"the module failed (rc %s, ssh exit %d)"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "${module_rc:-?}" "$rc"
fi
