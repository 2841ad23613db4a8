package rig

import (
	"context"
	"errors"
	"fmt"

	"github.com/sshrig/sshrig/internal/scorerun"
	"github.com/sshrig/sshrig/reconcile/score"
	"github.com/sshrig/sshrig/report"
)

// ReconcileOptions configure a scoring run of a reconcile probe.
type ReconcileOptions struct {
	// Target is where the states are produced; the zero value is the
	// embedded target.
	Target Target
	// Out, when not nil, is the run directory: its event log gets every
	// server event, and Reconcile writes report.json (with the log's head)
	// and a transcript per state into it, as Run does for cases.
	Out *RunDir
	// Score says what to score: the probe, the operation, the scenarios.
	// Its Target name is the target's when left empty.
	Score score.Options
}

// Reconcile scores a reconcile probe (see package reconcile/score; the runner
// is internal/scorerun) on the same run session as Run: the same target
// start, the same secrets kept out of the directory, the same event log. The
// report is returned even when err is a *score.PreflightError.
func Reconcile(ctx context.Context, o ReconcileOptions) (rep *score.Report, err error) {
	sess, err := openSession(ctx, o.Target, NetProxy, o.Out)
	if err != nil {
		return nil, err
	}
	so := o.Score
	if so.Target == "" {
		so.Target = o.Target.Name()
	}
	if o.Out != nil && so.WriteFile == nil {
		so.WriteFile = o.Out.WriteFile
	}
	rep, err = scorerun.Run(ctx, sess.env, so)
	sess.Close() // every event is in the log from here on
	if o.Out != nil && rep != nil {
		rep.LogHead = o.Out.Head()
		b, jerr := rep.JSON()
		if jerr == nil {
			jerr = o.Out.WriteFile(report.ReportFile, b)
		}
		if jerr != nil {
			err = errors.Join(err, fmt.Errorf("rig: %s: %w", report.ReportFile, jerr))
		}
	}
	return rep, err
}
