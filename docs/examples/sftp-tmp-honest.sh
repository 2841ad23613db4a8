#!/bin/sh
# sftp-tmp-honest.sh: upload the command to the absolute path /tmp/job.sh
# with `sftp put` (as deploy tools write to /tmp), then run it with
# `ssh HOST sh /tmp/job.sh`, and report honestly what happened. The steps
# and what each can tell are upload-honest.sh's.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/sftp-tmp-honest.sh'
exec "$(dirname "$0")/upload-honest.sh" -r /tmp/job.sh sftp
