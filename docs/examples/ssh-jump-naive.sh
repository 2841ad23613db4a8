#!/bin/sh
# ssh-jump-naive.sh: a wrapper around ssh -J as people write it for hosts
# behind a bastion. It takes ssh's exit status for the outcome, and when ssh
# exits 255 ("the bastion dropped the connection") it tries once more. Both
# are wrong after the command may have started: 255 then says nothing about
# the command, and the second attempt runs it again. sshrig catches it:
#
#   sshrig run --jump --tool 'exec:docs/examples/ssh-jump-naive.sh'
#
# fails with unsafe category findings from the exec moment on, and with a
# blind retry where the first attempt's command had run. Compare
# ssh-jump-honest.sh.

set -u
# Each attempt gets the whole deadline but a second (the retry then runs
# past it, where it runs at all).
budget=$(( ${SSHRIG_DEADLINE_MS:-5000} / 1000 - 1 ))
[ "$budget" -ge 1 ] || budget=1
cfg=$(mktemp) || exit 1
trap 'rm -f "$cfg"' EXIT
cat >"$cfg" <<CONFIG
Host *
	BatchMode yes
	IdentitiesOnly yes
	IdentityFile "$SSHRIG_IDENTITY"
	UserKnownHostsFile "$SSHRIG_KNOWN_HOSTS"
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	ConnectTimeout 2
	ServerAliveInterval 1
	ServerAliveCountMax 2
CONFIG
attempt() {
	timeout -s KILL "$budget" ssh -F "$cfg" -J "$SSHRIG_JUMP" -n -T -a -x \
		-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" >/dev/null 2>&1
}
attempt
rc=$?
if [ "$rc" -eq 255 ]; then
	attempt # the bastion is flaky: once more
	rc=$?
fi
if [ "$rc" -eq 0 ]; then
	printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s","message":"done"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID"
else
	printf '{"ok":false,"category":"confirmed_failure","operation":"%s","retry":"never","correlation_id":"%s","message":"the command failed (exit %d)"}\n' \
		"$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$rc"
fi
