// Package plainssh is an SSH server with no rig in it, for tests and
// benchmarks: it runs each exec request's command with /bin/sh -c, its
// stdin, stdout and stderr on the session, and returns its exit status, as
// sshd does without a terminal. It knows nothing of cases, moments, cuts or
// markers, so it is the baseline the rig's own server is measured against
// and a peer for code that only needs "an SSH server".
package plainssh
