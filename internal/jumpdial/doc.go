// Package jumpdial reaches an SSH target through a jump host, as `ssh -J`
// does: an SSH connection to the jump host, and inside it a direct-tcpip
// tunnel to the target, over which the caller runs the target's own SSH
// exchange. The rig's in-process clients (the reference tool, the engine's
// test client) use it for cases with a jump host.
package jumpdial
