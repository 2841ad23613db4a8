package matrix

import (
	"errors"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/fault"
)

func TestCaseValidate(t *testing.T) {
	for _, c := range DefaultMatrix() {
		if err := c.Validate(); err != nil {
			t.Errorf("default matrix: %v", err)
		}
	}
	for _, tc := range []struct {
		name  string
		c     Case
		field string
		msg   string
	}{
		{"no id", Case{Moment: fault.None}, "id", "missing"},
		{"no moment", Case{ID: "x"}, "moment", "missing"},
		{"cut at none", Case{ID: "x", Moment: fault.None, Cut: fault.Reset}, "cut", "nothing is cut there"},
		{"no cut", Case{ID: "x", Moment: fault.Started}, "cut", "needs a cut"},
		{"remote-kill late", Case{ID: "x", Moment: fault.Finished, Cut: fault.Reset, Disposition: fault.RemoteKill}, "disposition", "remote-kill cannot apply"},
		{"bad fixture", Case{ID: "x", Moment: fault.None, Fixture: "id-nul"}, "fixture", "id-nul"},
		{"scenario with command", Case{ID: "x", Moment: fault.Finished, Cut: fault.Reset, Scenario: ScenarioRecordNote, Command: "true"}, "command", "leave command out"},
		{"refused jump host", Case{ID: "x", Moment: fault.Refuse, Hop: fault.ClientJump}, "hop", "needs hop jump-target"},
		{"kill-helper behind", Case{ID: "x", Moment: fault.Started, Cut: fault.KillHelper, Hop: fault.JumpTarget}, "hop", "kill-helper needs hop client-jump"},
		{"credential behind", Case{ID: "x", Moment: fault.None, Credential: fault.RevokedKey, Hop: fault.ClientJump}, "hop", "no credential"},
		{"bad call", Case{ID: "x", Moment: fault.Exec, Cut: fault.Reset, Scenario: ScenarioRecordNote, Call: "read"}, "call", `unknown call "read"`},
		{"call without scenario", Case{ID: "x", Moment: fault.Exec, Cut: fault.Reset, Call: CallNote}, "call", "add scenario: record-note"},
		{"note started", Case{ID: "x", Moment: fault.Started, Cut: fault.Reset, Scenario: ScenarioRecordNote, Call: CallNote}, "call", "a note is cut at exec, finished, exit-status only, not at moment started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			var ce *CaseError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *CaseError", err)
			}
			if ce.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Validate() = %v (field %q), want field %q and %q", err, ce.Field, tc.field, tc.msg)
			}
		})
	}
}
