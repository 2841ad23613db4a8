#!/bin/sh
# ssh-reconcile-honest.sh: run one command over OpenSSH's ssh, honestly, and
# when its outcome is unknown, look before anything else: wait for the host to
# answer again (it may be rebooting) and run the operation's reconcile probe,
# then say what it found.
#
#   sshrig run --server-faults --cases 'reboot.*' --tool 'exec:docs/examples/ssh-reconcile-honest.sh'
#
# The attempt is ssh-honest.sh's, with all but three seconds of the budget
# (those are kept to look). Its report stands: a
# probe's answer never turns outcome_unknown into a success or a failure (the
# planner decides what happens next, told what the probe found), and nothing
# is run a second time. Compare ssh-retry-naive.sh, which runs it again.

set -u
here=$(dirname "$0")

json() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037'; }
report() { # category retry message
	printf '{"ok":false,"category":"%s","operation":"%s","retry":"%s","correlation_id":"%s","message":"%s"}\n' \
		"$1" "$(json "${SSHRIG_OPERATION:-}")" "$2" "$(json "${SSHRIG_CORRELATION_ID:-}")" "$(json "$3")"
}

start=$(date +%s)
deadline_ms=${SSHRIG_DEADLINE_MS:-5000}
# The attempt gets the budget but for three seconds kept to look, where
# there is a probe to look with (and at least two seconds).
attempt_ms=$deadline_ms
if [ -n "${SSHRIG_RECONCILE_COMMAND:-}" ]; then
	attempt_ms=$(( deadline_ms - 3000 ))
	[ "$attempt_ms" -ge 2000 ] || attempt_ms=2000
fi
first=$(SSHRIG_DEADLINE_MS=$attempt_ms "$here/ssh-honest.sh")
case "$first" in
*'"category":"outcome_unknown"'*) ;;
*)
	printf '%s\n' "$first"
	exit 0
	;;
esac
msg=$(printf '%s' "$first" | sed -n 's/.*"message":"\(.*\)"}$/\1/p')
if [ -z "${SSHRIG_RECONCILE_COMMAND:-}" ]; then
	report outcome_unknown reconcile_first "$msg; no reconcile probe was given: inspect the remote state before anything else"
	exit 0
fi

# Look until a second before the deadline: a host that went down answers
# again after its reboot; until then every connection fails or times out.
end=$(( start + deadline_ms / 1000 - 1 ))
tries=0
answer=
while [ "$(date +%s)" -lt "$end" ]; do
	tries=$(( tries + 1 ))
	left=$(( end - $(date +%s) ))
	[ "$left" -ge 1 ] || break
	if answer=$(timeout -s KILL "$left" ssh -F /dev/null -n -T -a -x \
		-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
		-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
		-o StrictHostKeyChecking=yes -o CheckHostIP=no -o UpdateHostKeys=no \
		-o ConnectTimeout=1 -o ServerAliveInterval=1 -o ServerAliveCountMax=1 \
		-o ControlMaster=no -o ControlPath=none \
		-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" "$SSHRIG_RECONCILE_COMMAND" 2>/dev/null) &&
		[ -n "$answer" ]; then
		break
	fi
	answer=
	sleep 0.2
done
echo "ssh-reconcile-honest: $tries probe attempt(s), answer: ${answer:-none}" >&2
if [ -z "$answer" ]; then
	report outcome_unknown reconcile_first "$msg; the host did not answer the reconcile probe within the budget ($tries attempts): inspect the remote state before anything else"
	exit 0
fi
state=$(printf '%s' "$answer" | sed -n 's/.*"state": *"\([a-z_]*\)".*/\1/p')
evidence=$(printf '%s' "$answer" | sed -n 's/.*"evidence": *"\([^"]*\)".*/\1/p')
report outcome_unknown reconcile_first "$msg; once the host answered again the reconcile probe says ${state:-nothing readable} ($evidence)"
