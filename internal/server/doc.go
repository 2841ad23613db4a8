// Package server owns the rig's SSH server: the remote side of every case.
//
// It is built on github.com/gliderlabs/ssh and runs the same way in-process
// (the embedded target), as `sshrig serve` in a separate process, and inside a
// disposable container. The rig drives it only through the control protocol
// (package control): case set-up, barrier releases and teardown go in; events
// come out.
//
// What it adds to a plain SSH server:
//
//   - Attribution. Every connection starts with the cutter's preamble naming its
//     case, so connections, sessions, processes and markers are attributed to
//     a case without the tool's cooperation, with many cases in parallel.
//   - Moments. It announces each moment of the exchange (accept, handshake,
//     auth, channel, exec, started, output, finished, exit-status) with a
//     sequence number and the count of bytes it had written on the connection,
//     and holds at the case's armed moment until the rig releases it. The rig
//     cuts while the server holds, after the cutter has delivered those bytes,
//     so a cut lands exactly at its moment every time.
//   - Dispositions. What the command does when its transport dies: survive,
//     hangup (its process group is killed) or remote-kill (killed right after
//     its start marker).
//   - Every case its own host. Each case's commands and SFTP requests see a
//     home and a /tmp of the case's own, in its tree under the scratch
//     directory, removed at the case's end: cases running at once never
//     meet each other's files (host.go, package hostsetup, docs/server.md).
//     Before it goes, what an upload the case cut left there is measured
//     and said (upload.go).
//   - A jump host. A case armed with a jump host (control.Arm.Jump) makes
//     the server a bastion on the case's first connections: it serves
//     direct-tcpip to the case's target only, relays the tunnel over a
//     connection the case's second cutter carries back to it as the
//     target, and holds the armed moment on the target's connections
//     only (jump.go).
//   - Process truth. Commands run through /bin/sh -c in the case's home,
//     each in its own process group, reaped with wait4(WUNTRACED). A
//     marker-wrapped command stops itself right after its start marker and
//     again after its work (see package markers); those stops tell the server
//     exactly when the command started and finished its work, independently of
//     the ledger.
package server
