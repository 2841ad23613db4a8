package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ReadReport reads a run directory's report.json.
func ReadReport(runDir string) (*Report, error) {
	path := filepath.Join(runDir, ReportFile)
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
