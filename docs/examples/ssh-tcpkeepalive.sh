#!/bin/sh
# ssh-tcpkeepalive.sh: OpenSSH's ssh watched only by TCP keepalive
# (TCPKeepAlive yes, no ServerAliveInterval, no timeout of its own), as many
# scripts run it. It reports honestly what ssh's debug log says happened
# (the classification of ssh-honest.sh, shortened), as one result object on
# stdout.
#
#   sshrig run --tool exec:docs/examples/ssh-tcpkeepalive.sh --net kernel --cases started.blackhole.survive
#
# Under a blackhole it hangs on both networks, for two reasons the kernel
# network shows (docs/network.md): the first keepalive probe waits for
# net.ipv4.tcp_keepalive_time (7200 s unless the host says otherwise), and
# while data waits for an acknowledgement (ssh has just sent the channel's
# EOF) the kernel retransmits instead of probing.

set -u

json() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037'; }
report() { # category retry message
	ok=false
	[ "$1" = succeeded ] && ok=true
	printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$ok" "$1" "$(json "${SSHRIG_OPERATION:-}")" "$2" "$(json "${SSHRIG_CORRELATION_ID:-}")" "$(json "$3")"
}

log=$(mktemp) || { report local_failure bounded "cannot create a temporary file; nothing was sent"; exit 1; }
trap 'rm -f "$log"' EXIT

ssh -v -F /dev/null -n -T -a -x \
	-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
	-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o CheckHostIP=no -o UpdateHostKeys=no \
	-o ConnectTimeout=2 -o TCPKeepAlive=yes -o ServerAliveInterval=0 \
	-o ControlMaster=no -o ControlPath=none \
	-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_COMMAND" >/dev/null 2>"$log"
rc=$?
cat "$log" >&2

status=$(sed -n 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ "$status" = 0 ]; then
	report succeeded never "the remote command exited 0"
elif [ -n "$status" ]; then
	report confirmed_failure never "the remote command exited $status"
elif grep -q 'rtype exit-signal' "$log"; then
	report confirmed_failure never "the server reported the remote command killed by a signal"
elif grep -q '^debug1: Sending command: ' "$log"; then
	report outcome_unknown reconcile_first "the exec request was sent and no exit status arrived (ssh exited $rc): reconcile before retrying"
else
	report local_failure bounded "ssh failed before sending the command (exit $rc); nothing ran"
fi
exit 0
