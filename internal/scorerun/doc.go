// Package scorerun runs a scoring of a reconciliation probe, for
// rig.Reconcile: on a started engine environment, it produces every remote
// state of an operation for real (never started, started and killed, still
// running, completed with 0, completed with non-zero, executed twice), checks
// with the engine's own truth that each state is what it meant to produce,
// runs the probe (locally or on the target, over a case of its own) and
// grades its answer into a score.Report.
//
// It owns the runner only. The report's types, the options, the operations
// and the report's text stay public in package reconcile/score; the grading
// and the confusion matrix are in package reconcile. The runner drives the
// engine (internal/engine), which is why it is internal: no public package
// exposes an internal type.
package scorerun
