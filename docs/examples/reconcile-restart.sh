#!/bin/sh
# reconcile-restart.sh: a reconciliation probe for restart_service, the
# operation that restarts a small demo service on the target (docs/reconcile.md).
#
#   sshrig reconcile --operation restart_service --probe docs/examples/reconcile-restart.sh
#
# A restart that "exited 0" is not proof that the service was restarted: the
# probe checks what it can invoke, not what was reported. The service's pid
# and start time (whole seconds) are in reconcile-demo/service.pid in the
# target's scratch directory (the ledger's directory), written by whoever
# started it. The restart is complete only if its complete marker says exit 0
# AND that service is running AND it started no earlier than the restart's
# start marker. Otherwise the markers decide, as in reconcile-markers.sh.
#
# Whole seconds: an instance started in the same second as the restart counts
# as started by it. That cannot turn a real "not started" into "completed"
# (no start marker decides first); it only weakens the check against a
# restart that claims success without having restarted anything. A marker
# written by a shell without a clock of its own (dash: no EPOCHSECONDS) has
# "-" for its seconds; then the service must be in the restart's process
# group instead (the restart started it), or the answer is unknown.

set -u

if [ -n "${SSHRIG_ADDR:-}" ]; then
	# Local: run this same script on the target (see reconcile-markers.sh).
	quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
	exec ssh -F /dev/null -n -T -a -x -o LogLevel=ERROR \
		-o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile="$SSHRIG_IDENTITY" \
		-o UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
		-o StrictHostKeyChecking=yes -o CheckHostIP=no -o UpdateHostKeys=no \
		-o ConnectTimeout=5 -o ControlMaster=no -o ControlPath=none \
		-p "$SSHRIG_PORT" -l "$SSHRIG_USER" "$SSHRIG_HOST" \
		"SSHRIG_CORRELATION_ID=$(quote "$SSHRIG_CORRELATION_ID") SSHRIG_LEDGER=$(quote "$SSHRIG_LEDGER") sh -c $(quote "$(cat "$0")")"
fi

answer() { # state evidence
	printf '{"state": "%s", "evidence": "%s"}\n' "$1" "$2"
}

id=${SSHRIG_CORRELATION_ID:?SSHRIG_CORRELATION_ID is not set}
ledger=${SSHRIG_LEDGER:?SSHRIG_LEDGER is not set}
if [ ! -r "$ledger" ]; then
	# No ledger at all is not evidence that nothing ran: say so.
	answer unknown "cannot read the ledger $ledger"
	exit 0
fi
cd "$(dirname "$ledger")" || { answer unknown "cannot enter the scratch directory"; exit 0; }

# starts completes start-pid start-seconds exit-code, for this id only.
# shellcheck disable=SC2046 # awk prints the fields, split on purpose
set -- $(awk -v id="$id" '
	$1 == id && $2 == "start"    { starts++; pid = $4; at = $3 }
	$1 == id && $2 == "complete" { completes++; rc = $3 }
	END { print starts + 0, completes + 0, (pid == "" ? "-" : pid), (at == "" ? "-" : at), (rc == "" ? "-" : rc) }
' "$ledger")
starts=$1 completes=$2 pid=$3 began=$4 rc=$5

if [ "$starts" -eq 0 ]; then
	answer not_started "no start marker for $id: the service was not touched"
	exit 0
elif [ "$starts" -gt 1 ]; then
	answer duplicated "$starts start markers for $id: restarted more than once"
	exit 0
elif [ "$completes" -eq 0 ]; then
	if kill -0 "$pid" 2>/dev/null; then
		answer in_progress "the restart (pid $pid) is still running"
	else
		at=" at $began"
		[ "$began" != - ] || at=""
		answer failed "the restart (pid $pid) began$at and is gone without completing"
	fi
	exit 0
elif [ "$rc" -ne 0 ]; then
	answer failed "the restart exited $rc"
	exit 0
fi

# Exit 0: is the service running, and did it start after the restart began?
if ! read -r svc_pid svc_start 2>/dev/null <reconcile-demo/service.pid; then
	answer failed "the restart exited 0 but there is no service.pid"
elif ! kill -0 "$svc_pid" 2>/dev/null; then
	answer failed "the restart exited 0 but the service (pid $svc_pid) is not running"
elif [ "$began" = - ]; then
	# The marker has no time to compare with. The restart's shell (the
	# marker's pid) led its process group, as an SSH server starts every
	# command, and what it started in the background is in that group; an
	# instance started before it is not. /proc/PID/stat's fifth field is the
	# process group.
	if ! read -r _ _ _ _ svc_pgid _ 2>/dev/null <"/proc/$svc_pid/stat"; then
		answer unknown "the service (pid $svc_pid) is running, but the restart's marker has no time and /proc cannot say who started the service"
	elif [ "$svc_pgid" = "$pid" ]; then
		answer completed "the service (pid $svc_pid) is running and was started by the restart (its process group is the restart's shell, $pid)"
	else
		answer failed "the restart exited 0 but the service (pid $svc_pid) was not started by it (process group $svc_pgid, the restart's shell $pid)"
	fi
elif [ "$svc_start" -lt "$began" ]; then
	answer failed "the restart exited 0 but the service (pid $svc_pid) started at $svc_start, before the restart began at $began"
else
	answer completed "the service (pid $svc_pid) started at $svc_start, not before the restart began at $began, and is running"
fi
