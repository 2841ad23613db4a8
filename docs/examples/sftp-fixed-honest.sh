#!/bin/sh
# sftp-fixed-honest.sh: upload the command to job.sh in the home with
# `sftp put`, then run it with `ssh HOST sh job.sh`, and report honestly
# what happened. The steps and what each can tell are upload-honest.sh's.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/sftp-fixed-honest.sh'
exec "$(dirname "$0")/upload-honest.sh" -r job.sh sftp
