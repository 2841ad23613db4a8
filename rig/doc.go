// Package rig orchestrates runs: it holds the case matrix, runs each case's
// tool against the engine (a cutter in front of the rig's SSH server), judges
// the evidence with the verdict engine, and writes the run directory (JSON
// report, event log, per-case transcripts, JUnit XML).
//
// Before any case, a preflight proves the chain is invocable: the tool runs a
// no-fault case and must return a parseable result reporting success, with the
// ledger showing exactly one start and one complete. "Enabled" is not "works".
package rig
