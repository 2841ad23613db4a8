// Package target says what the rig needs of a started SSH server, its
// target: an Endpoint (where its SSH and control ports are, how to stop it,
// its logs, an out-of-band reading of its ledger) and the Launcher that
// starts one and hands it the control token (TokenEnv). The embedded target
// runs the server in the rig's process; package containers' Launcher runs
// `sshrig serve` in a disposable container. The server itself, its control
// protocol and the engine that drives it are internal.
package target
