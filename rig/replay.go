package rig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ReadReport reads a run directory's report.json.
func ReadReport(runDir string) (*Report, error) {
	path := filepath.Join(runDir, "report.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Version != ReportVersion {
		return nil, fmt.Errorf("%s: report version %d, this sshrig reads %d", path, r.Version, ReportVersion)
	}
	return &r, nil
}

// ErrNoCaseRun is returned by ReplayCase for a name no case run has.
var ErrNoCaseRun = errors.New("rig: no such case run")

// ReplayCase finds the recorded case run called name (its RunName, such as
// "started.reset.survive#7", or its correlation id) and returns the case to
// run again: the matrix's case with the recorded draws, so the tool and the
// perturbation draw what they drew then.
func ReplayCase(rep *Report, matrix []Case, name string) (Case, CaseReport, error) {
	i := slices.IndexFunc(rep.Cases, func(c CaseReport) bool { return c.RunName() == name || c.CorrelationID == name })
	if i < 0 {
		var some []string
		for _, c := range rep.Cases[:min(3, len(rep.Cases))] {
			some = append(some, c.RunName())
		}
		return Case{}, CaseReport{}, fmt.Errorf("%w %q in the report (case runs are named like %s, or by correlation id)", ErrNoCaseRun, name, strings.Join(some, ", "))
	}
	was := rep.Cases[i]
	j := slices.IndexFunc(matrix, func(c Case) bool { return c.ID == was.ID })
	if j < 0 {
		return Case{}, was, fmt.Errorf("case %s is not in the matrix (a run of another matrix file needs --matrix)", was.ID)
	}
	c := matrix[j]
	if was.Draw != nil {
		d := *was.Draw
		c.Draw = &d
	}
	return c, was, nil
}

// Reproduced compares a replay with the case run it replays: the same
// verdict, and for a failure the same assertions and rules violated. why
// says what differs, or what was reproduced.
func Reproduced(was, now CaseReport) (ok bool, why string) {
	rules := func(c CaseReport) string {
		var r []string
		for _, v := range c.Violations {
			r = append(r, v.Assertion+"/"+v.Rule)
		}
		slices.Sort(r)
		return strings.Join(slices.Compact(r), ", ")
	}
	describe := func(c CaseReport) string {
		s := string(c.Verdict)
		if r := rules(c); r != "" {
			s += " (" + r + ")"
		}
		return s
	}
	switch {
	case was.Verdict != now.Verdict:
		return false, fmt.Sprintf("recorded %s, replayed %s", describe(was), describe(now))
	case was.Verdict == Fail && rules(was) != rules(now):
		return false, fmt.Sprintf("both failed, but recorded %s, replayed %s", describe(was), describe(now))
	}
	return true, "reproduced: " + describe(now)
}
