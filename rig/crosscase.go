package rig

import (
	"fmt"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

// crossCase finds, in one case's own evidence, the marks of a tool that
// carries work across cases (a cached connection, a pool shared by
// concurrent calls): another case's command on this case's connection, or a
// result for a case whose address saw no connection at all. Without these,
// the first case would be blamed for the other's command (as a follow-up) and
// the other, never connected, could pass as "conservative".
func crossCase(evs evidence.Case, c matrix.Case, reported *result.Result) []report.Violation {
	var out []report.Violation
	for _, f := range evs.Foreign() {
		out = append(out, report.Violation{Assertion: report.AssertEvidence, Rule: verdict.RuleForeignRequest,
			Detail: fmt.Sprintf("the command of correlation id %s arrived over connection %d, which the tool opened for this case: it carries connections across cases", f.MarkerID, f.Conn)})
	}
	// Only a case with no cut and a reachable address is sure to see a
	// connection from a tool that did its work; where a person refuses an
	// agent's approval, no connection is the point.
	planned := c.Moment == fault.None && c.Cut != fault.Stall && c.Host == "" && !c.PersonRefuses()
	if planned && !evs.Connected() && reported != nil && reported.Category != result.LocalFailure {
		out = append(out, report.Violation{Assertion: report.AssertEvidence, Rule: verdict.RuleNoConnection,
			Detail: fmt.Sprintf("the tool reported %s, but never connected to this case's address: the answer cannot be about this case's request", reported.Category)})
	}
	return out
}

// withViolations adds violations found outside verdict.Judge; any fails the case.
func withViolations(v verdict.Verdict, vs []report.Violation) verdict.Verdict {
	if len(vs) == 0 {
		return v
	}
	v.Violations = append(v.Violations, vs...)
	v.Status = report.Fail
	return v
}
