// Package score holds what scoring a reconciliation probe against the truth
// is made of: the operations whose remote states are produced (their
// command variants, set-up and teardown), the options of a scoring run
// (Options, with the defaults a run uses), and its report (Report, Row,
// Finding, ProbeRun, Attempt: report.json, its text and summary line). The
// grading and the confusion matrix are in package reconcile.
//
// It does not run anything. The runner, which produces each state on a
// started target with the engine, runs the probe and grades it, lives in
// internal/scorerun (it drives the engine, which no public package exposes);
// rig.Reconcile (what `sshrig reconcile` calls) opens the target on the same
// run session as a run of cases, so both run directories have the same event
// log, redaction and head, and runs it there.
package score
