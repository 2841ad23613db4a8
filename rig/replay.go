package rig

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// ErrNoCaseRun is returned by ReplayCase for a name no case run has.
var ErrNoCaseRun = errors.New("rig: no such case run")

// ReplayCase finds the recorded case run called name (its RunName, such as
// "started.reset.survive#7", or its correlation id) and returns the case to
// run again: the matrix's case with the recorded draws, so the tool and the
// perturbation draw what they drew then.
func ReplayCase(rep *report.Report, cases []matrix.Case, name string) (matrix.Case, report.CaseReport, error) {
	i := slices.IndexFunc(rep.Cases, func(c report.CaseReport) bool { return c.RunName() == name || c.CorrelationID == name })
	if i < 0 {
		var some []string
		for _, c := range rep.Cases[:min(3, len(rep.Cases))] {
			some = append(some, c.RunName())
		}
		return matrix.Case{}, report.CaseReport{}, fmt.Errorf("%w %q in the report (case runs are named like %s, or by correlation id)", ErrNoCaseRun, name, strings.Join(some, ", "))
	}
	was := rep.Cases[i]
	j := slices.IndexFunc(cases, func(c matrix.Case) bool { return c.ID == was.ID })
	if j < 0 {
		return matrix.Case{}, was, fmt.Errorf("case %s is not in the matrix (a run of another matrix file needs --matrix)", was.ID)
	}
	c := cases[j]
	if was.Draw != nil {
		d := *was.Draw
		c.Draw = &d
	}
	return c, was, nil
}
