#!/bin/sh
# sftp-honest.sh: upload the command as a script with OpenSSH's sftp (sftp -b),
# run it with ssh (sh FILE), and report honestly what happened. The steps and
# what each can tell are upload-honest.sh's.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/sftp-honest.sh'
exec "$(dirname "$0")/upload-honest.sh" sftp
