// Package rig owns the run: Run and its Options, the Target the SSH server
// runs on, run directories (the event log, transcripts, report.json), the
// runner that takes each case of a matrix (package matrix) through the
// engine (a cutter in front of the rig's SSH server) to its verdict,
// scheduling and repetition, spooling a long run's case runs, merging
// shards' run directories, and reconcile-probe runs. What a run writes is
// package report's; the cases it runs are package matrix's.
//
// Before any case, a preflight proves the chain is invocable: the tool runs a
// no-fault case and must return a parseable result reporting success, with the
// ledger showing exactly one start and one complete. "Enabled" is not "works".
// The preflight also measures what a case of the tool costs, and the run
// starts no more cases at once than the machine can run without starving
// them (sizing.go); before a tool counts as hung, the time the machine made
// its case wait is given back (machinewait.go); a timing verdict seen while
// the machine was busy is confirmed by running the case again alone
// (confirm.go).
//
// A case run's verdict is decided in one place (decide, rig/decide.go) from
// every fact that can change it, and the verdict event in the log is written
// after it, carrying what the report carries: the log and the report agree.
//
// Reconcile scores a reconcile probe (package reconcile/score) on the same run
// session: every run of the rig, of cases or of a probe, starts its target,
// keeps its secrets out of the directory and logs the server's events in one
// place (session.go).
package rig
