#!/bin/sh
# ssh-opid-naive.sh: the replay that operation ids exist to prevent. After a
# connection lost once the command was sent, it sends the command again, as
# a new operation: under a fresh operation id, so the remote side has
# nothing to de-duplicate and runs the work a second time. Then it reports
# the replay's result as if it were the only run. sshrig catches it:
#
#   sshrig run --tool 'exec:docs/examples/ssh-opid-naive.sh' --cases 'started.reset.survive'  # exits 1
#
# fails with blind_retry wherever the connection is lost after the command
# was sent. Compare ssh-opid-honest.sh, which resends under the same id.

set -u
newop() { echo "op-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"; }
log=$(mktemp) && trap 'rm -f "$log"' EXIT
send() {
	op=$(newop) # the defect: every send is a new operation
	timeout -s KILL 2 ssh -v -F /dev/null -n -T -a -x \
		-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
		-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
		-o StrictHostKeyChecking=yes -o CheckHostIP=no \
		-o ConnectTimeout=2 -o ServerAliveInterval=1 -o ServerAliveCountMax=1 \
		-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "SSHRIG_OPERATION_ID=$op $SSHRIG_COMMAND" >/dev/null 2>"$log"
}
send
status=$(sed -n 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ -z "$status" ] && grep -q '^debug1: Sending command: ' "$log"; then
	send # "the connection dropped, run it again"
	status=$(sed -n 's/^debug1: Exit status \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
fi
case $status in
0) ok=true c=succeeded r=never ;;
[0-9]*) ok=false c=confirmed_failure r=never ;;
*) ok=false c=local_failure r=bounded ;;
esac
printf '{"ok":%s,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","operation_id":"%s"}\n' \
	"$ok" "$c" "$SSHRIG_OPERATION" "$r" "$SSHRIG_CORRELATION_ID" "$op"
