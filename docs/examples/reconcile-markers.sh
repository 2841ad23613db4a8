#!/bin/sh
# reconcile-markers.sh: a reconciliation probe that reads the markers ledger
# by correlation id and says what became of the attempt, as one answer object
# on stdout: {"state": "...", "evidence": "..."} (docs/reconcile.md).
#
#   sshrig reconcile --probe docs/examples/reconcile-markers.sh
#   sshrig reconcile --remote --probe "$(cat docs/examples/reconcile-markers.sh)"
#
# Run locally, it finds SSHRIG_ADDR and friends (docs/tool-contract.md) and
# sends itself to the target with ssh; run on the target (--remote, or by the
# ssh below), it reads $SSHRIG_LEDGER directly. Either way the decision is
# made on the target, where the ledger and the processes are:
#
#   no start marker for the id            not_started
#   two or more start markers             duplicated
#   a complete marker with exit 0         completed
#   a complete marker with another exit   failed
#   a start marker, its pid alive         in_progress
#   a start marker, its pid gone          failed (killed, or the host went down)
#
# The ledger's lines are "ID start SECONDS PID" and "ID complete EXIT SECONDS
# PID" (SECONDS is "-" where the target's shell has no clock); PID is the
# shell that ran the wrapped command. `kill -0 PID` asks
# whether it still runs (POSIX; busybox sh has it too). Only this id's lines
# count: other attempts share the ledger.

set -u

if [ -n "${SSHRIG_ADDR:-}" ]; then
	# Local: run this same script on the target, with the two variables it
	# needs in front of it (an SSH server need not accept environment).
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

# starts completes start-pid exit-code, for this id only (awk compares the
# first field as a string, so ids with dots are matched exactly).
# shellcheck disable=SC2046 # awk prints the fields, split on purpose
set -- $(awk -v id="$id" '
	$1 == id && $2 == "start"    { starts++; pid = $4 }
	$1 == id && $2 == "complete" { completes++; rc = $3 }
	END { print starts + 0, completes + 0, (pid == "" ? "-" : pid), (rc == "" ? "-" : rc) }
' "$ledger")
starts=$1 completes=$2 pid=$3 rc=$4

if [ "$starts" -eq 0 ]; then
	answer not_started "no start marker for $id"
elif [ "$starts" -gt 1 ]; then
	answer duplicated "$starts start markers for $id"
elif [ "$completes" -gt 0 ] && [ "$rc" -eq 0 ]; then
	answer completed "complete marker with exit 0 (pid $pid)"
elif [ "$completes" -gt 0 ]; then
	answer failed "complete marker with exit $rc (pid $pid)"
elif kill -0 "$pid" 2>/dev/null; then
	answer in_progress "start marker, no complete marker, pid $pid still running"
else
	answer failed "start marker, no complete marker, pid $pid is gone"
fi
