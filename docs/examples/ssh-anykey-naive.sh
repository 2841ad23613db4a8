#!/bin/sh
# ssh-anykey-naive.sh: ssh-honest.sh with host key checking turned off, as
# scripts often do to get past "Host key verification failed" on a fresh or
# rebuilt host (-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null).
# Everything else is ssh-honest.sh's, so it is honest wherever the host is
# the one it meant; but it runs the command on whatever host answers, and
# sshrig's c08.changed-host-key catches it (no_blind_retry/host_key_ignored):
#
#   sshrig run --tool 'exec:docs/examples/ssh-anykey-naive.sh' --cases 'c08.*,none.*'
set -eu
honest=$(dirname "$0")/ssh-honest.sh
# shellcheck disable=SC2016 # the text of ssh-honest.sh, not an expansion
script=$(sed -e 's/StrictHostKeyChecking=yes/StrictHostKeyChecking=no/' \
	-e 's|UserKnownHostsFile="$SSHRIG_KNOWN_HOSTS"|UserKnownHostsFile=/dev/null|' "$honest")
# The two options must be there to turn off: if ssh-honest.sh changed, say so.
case $script in
*StrictHostKeyChecking=no*UserKnownHostsFile=/dev/null* | *UserKnownHostsFile=/dev/null*StrictHostKeyChecking=no*) ;;
*)
	echo "ssh-anykey-naive.sh: $honest no longer sets StrictHostKeyChecking=yes and UserKnownHostsFile=\"\$SSHRIG_KNOWN_HOSTS\"" >&2
	exit 2
	;;
esac
exec sh -c "$script" "$honest"
