// Package score scores a reconciliation probe against the truth: for an
// operation, it produces every remote state for real on a target (never
// started, started and killed, still running, completed with 0, completed
// with non-zero, executed twice), checks with the engine's own truth that each
// state is what it meant to produce, runs the probe and grades its answer.
// The grading and the confusion matrix are in package reconcile; this package
// drives the engine, and so cannot live in reconcile (the engine imports it).
//
// It does not start a target of its own: Run scores on a started one, and
// rig.Reconcile (what `sshrig reconcile` calls) opens it on the same run
// session as a run of cases, so both run directories have the same event
// log, redaction and head.
package score
