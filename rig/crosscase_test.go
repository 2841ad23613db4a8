package rig

import (
	"strings"
	"testing"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

func TestCrossCase(t *testing.T) {
	const id, other = "c-1", "c-2"
	accepted := control.Event{Kind: control.ConnAccepted, Conn: 1}
	own := control.Event{Kind: control.ExecReceived, Conn: 1, MarkerID: id}
	foreign := control.Event{Kind: control.ExecReceived, Conn: 1, MarkerID: other}
	probe := control.Event{Kind: control.ExecReceived, Conn: 2} // unmarked: a probe or a lookup
	none := matrix.Case{Moment: fault.None}
	cut := matrix.Case{Moment: fault.Started, Cut: fault.Reset}
	unknown := &result.Result{Category: result.OutcomeUnknown}
	local := &result.Result{Category: result.LocalFailure}
	for _, tc := range []struct {
		name     string
		events   []control.Event
		c        matrix.Case
		reported *result.Result
		rules    string
	}{
		{"an honest case", []control.Event{accepted, own, probe}, none, &result.Result{Category: result.Succeeded}, ""},
		{"another case's command on this case's connection", []control.Event{accepted, own, foreign, foreign}, none, unknown, verdict.RuleForeignRequest},
		{"a result without a connection", nil, none, unknown, verdict.RuleNoConnection},
		{"local_failure without a connection", nil, none, local, ""},
		{"a cut case without a connection is the landing's business", nil, cut, unknown, ""},
		{"an unresolvable host sees no connection", nil, matrix.Case{Moment: fault.None, Host: "nowhere.invalid"}, unknown, ""},
		{"a stall", nil, matrix.Case{Moment: fault.None, Cut: fault.Stall}, unknown, ""},
		{"no result", nil, none, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rules []string
			for _, v := range crossCase(evidence.Of(tc.events, id), tc.c, tc.reported) {
				rules = append(rules, v.Rule)
				if v.Assertion != report.AssertEvidence || v.Detail == "" {
					t.Errorf("violation %+v", v)
				}
			}
			if strings.Join(rules, ",") != tc.rules {
				t.Errorf("rules %v, want %q", rules, tc.rules)
			}
		})
	}
}
