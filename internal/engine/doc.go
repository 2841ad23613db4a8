// Package engine runs single cases against the rig's SSH server: it launches
// the server (in this process, as a separate `sshrig serve` process, or — in
// another package — in a container), speaks the control protocol, puts a cutter
// in front of every case, cuts when the server holds at the armed moment,
// releases the hold, and afterwards establishes the truth from the ledger and
// the server's process events.
//
// It knows nothing of tools, results or verdicts: it turns a case spec into
// evidence. Orchestration (matrices, tools, verdicts, reports) lives in rig.
package engine
