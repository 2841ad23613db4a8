package verdict

import "testing"

func TestCheckSteps(t *testing.T) {
	c, l, lf, n := Step{Op: StepCreate}, Step{Op: StepLookup}, Step{Op: StepLookup, Found: true}, Step{Op: StepNote}
	lp := Step{Op: StepLookup, Pending: true}
	// Calls the case's cut landed in (matrix.Case.Call).
	lostLookup, lostNote := Step{Op: StepLookup, Found: true, Lost: true}, Step{Op: StepNote, Lost: true}
	for _, tc := range []struct {
		steps        []Step
		firstUnknown bool
		path         string
		done, bad    bool
	}{
		{[]Step{c, lf, n}, true, "create -> outcome_unknown -> lookup -> found -> attach_note", true, false},
		{[]Step{c, l, c, n}, true, "create -> outcome_unknown -> lookup -> not_found -> create -> attach_note", true, false},
		{[]Step{c, n}, false, "create -> attach_note", true, false},
		{[]Step{c}, true, "create -> outcome_unknown", false, false},
		{[]Step{c, c, n}, true, "create -> outcome_unknown -> create", false, true},
		{[]Step{c, n}, true, "create -> outcome_unknown -> attach_note", false, true},
		{[]Step{c, lf, c}, true, "create -> outcome_unknown -> lookup -> found -> create", false, true},
		{[]Step{c, l, n}, true, "create -> outcome_unknown -> lookup -> not_found -> attach_note", false, true},
		{[]Step{c, lp, c}, true, "create -> outcome_unknown -> lookup -> pending -> create", false, true},
		{[]Step{c, lp, n}, true, "create -> outcome_unknown -> lookup -> pending -> attach_note", false, true},
		{[]Step{c, lp, l, c, n}, true, "create -> outcome_unknown -> lookup -> pending -> lookup -> not_found -> create -> attach_note", true, false},
		{[]Step{c, lp, lf, n}, true, "create -> outcome_unknown -> lookup -> pending -> lookup -> found -> attach_note", true, false},
		{[]Step{c, {Op: StepUnknown}}, true, "create -> outcome_unknown -> unknown", false, true},
		// A lost read-back taught nothing: read again, then note.
		{[]Step{c, lostLookup, lf, n}, false, "create -> lookup -> lost -> lookup -> found -> attach_note", true, false},
		{[]Step{c, lostLookup, n}, false, "create -> lookup -> lost -> attach_note", true, false},
		{[]Step{c, lostLookup, c}, false, "create -> lookup -> lost -> create", false, true},
		// A lost note: nothing the tools can read says whether it is on the
		// record; the task is not known done, and a second note is blind.
		{[]Step{c, lf, lostNote}, false, "create -> lookup -> found -> attach_note -> outcome_unknown", false, false},
		{[]Step{c, lf, lostNote, n}, false, "create -> lookup -> found -> attach_note -> outcome_unknown -> attach_note", false, true},
		{[]Step{c, lf, lostNote, lf, n}, false, "create -> lookup -> found -> attach_note -> outcome_unknown -> lookup -> found -> attach_note", false, true},
		{[]Step{c, lostNote, c}, false, "create -> attach_note -> outcome_unknown -> create", false, true},
		{[]Step{c, n, lf}, false, "create -> attach_note -> lookup -> found", true, false},
	} {
		path, done, problem := CheckSteps(tc.steps, tc.firstUnknown)
		if path != tc.path || done != tc.done || (problem != "") != tc.bad {
			t.Errorf("%v: path %q done %v problem %q; want %q %v bad=%v", tc.steps, path, done, problem, tc.path, tc.done, tc.bad)
		}
	}
}
