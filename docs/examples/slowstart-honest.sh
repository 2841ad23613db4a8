#!/bin/sh
# slowstart-honest.sh: ssh-honest.sh after about 0.4 s of CPU work, as a tool
# spends it before it connects (an interpreter starting, a configuration
# loading). Honest in every answer; what it tests is the rig: on a busy
# machine, a case whose tool waits for a core spends its budget waiting, so
# the rig sizes how many cases run at once to the tool (docs/performance.md,
# "How many cases at once").
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/slowstart-honest.sh'

set -u

# The start-up work: a fixed amount of computation (about 0.4 s of CPU on the
# machine of docs/performance.md), not a fixed time, as an interpreter's is.
awk 'BEGIN { for (i = 0; i < 15000000; i++) s += i; exit 0 }'

exec "$(dirname "$0")/ssh-honest.sh"
