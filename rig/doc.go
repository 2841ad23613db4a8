// Package rig orchestrates runs: it holds the case matrix, runs each case's
// tool against the engine (a cutter in front of the rig's SSH server), judges
// the evidence with the verdict engine, and writes the run directory (JSON
// report, event log, per-case transcripts, JUnit XML).
//
// Before any case, a preflight proves the chain is invocable: the tool runs a
// no-fault case and must return a parseable result reporting success, with the
// ledger showing exactly one start and one complete. "Enabled" is not "works".
//
// Reconcile scores a reconcile probe (package reconcile/score) on the same run
// session: every run of the rig, of cases or of a probe, starts its target,
// keeps its secrets out of the directory and logs the server's events in one
// place (session.go).
package rig
