#!/bin/sh
# scp-honest.sh [SCP-OPTIONS]: copy the command as a script with OpenSSH's scp
# (SFTP mode by default; arguments go to scp), run it with ssh (sh FILE), and
# report honestly what happened. The steps and what each can tell are
# upload-honest.sh's.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/scp-honest.sh'
exec "$(dirname "$0")/upload-honest.sh" scp "$@"
