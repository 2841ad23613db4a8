#!/bin/sh
# twoexec-fixed-honest.sh: copy the command to job.sh with
# `ssh HOST 'cat > job.sh'`, then run it with `ssh HOST 'sh job.sh'` (two
# exec requests, a fixed name), and report honestly what happened. The
# steps and what each can tell are upload-honest.sh's.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/twoexec-fixed-honest.sh'
exec "$(dirname "$0")/upload-honest.sh" -r job.sh exec
