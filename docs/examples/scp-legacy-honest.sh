#!/bin/sh
# scp-legacy-honest.sh: scp-honest.sh in scp's legacy mode (scp -O): the copy
# is an exec request running scp -t on the server, so the run is the tool's
# second exec, not its first. The classification is upload-honest.sh's: a copy
# that failed ran nothing; the run's outcome comes from ssh's debug log.
#
# Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/scp-legacy-honest.sh'
exec "$(dirname "$0")/upload-honest.sh" scp -O
