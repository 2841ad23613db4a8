#!/bin/sh
# reconcile-install.sh: a reconciliation probe for install_package, the
# operation that "installs" version 2.0 of a demo package on the target
# (docs/reconcile.md).
#
#   sshrig reconcile --operation install_package --probe docs/examples/reconcile-install.sh
#
# The installed version is in reconcile-demo/installed-version in the
# target's scratch directory (the ledger's directory). The install is
# complete only if its complete marker says exit 0 AND the installed version
# is the one it installs: an install that exited 0 with the old version still
# in place did not install anything. Otherwise the markers decide, as in
# reconcile-markers.sh.

set -u
want=2.0

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

installed=none
read -r installed 2>/dev/null <reconcile-demo/installed-version

# starts completes start-pid exit-code, for this id only.
# shellcheck disable=SC2046 # awk prints the fields, split on purpose
set -- $(awk -v id="$id" '
	$1 == id && $2 == "start"    { starts++; pid = $4 }
	$1 == id && $2 == "complete" { completes++; rc = $3 }
	END { print starts + 0, completes + 0, (pid == "" ? "-" : pid), (rc == "" ? "-" : rc) }
' "$ledger")
starts=$1 completes=$2 pid=$3 rc=$4

if [ "$starts" -eq 0 ]; then
	answer not_started "no start marker for $id; installed version $installed"
elif [ "$starts" -gt 1 ]; then
	answer duplicated "$starts start markers for $id: installed more than once; installed version $installed"
elif [ "$completes" -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
	answer in_progress "the install (pid $pid) is still running; installed version $installed"
elif [ "$completes" -eq 0 ]; then
	answer failed "the install (pid $pid) is gone without completing; installed version $installed"
elif [ "$rc" -ne 0 ]; then
	answer failed "the install exited $rc; installed version $installed"
elif [ "$installed" != "$want" ]; then
	answer failed "the install exited 0 but the installed version is $installed, not $want"
else
	answer completed "version $installed is installed"
fi
