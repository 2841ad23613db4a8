package rig

import (
	"bytes"
	"context"
	"strings"

	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/tool"
)

// Optional abilities of a tool (package tool): an Answerer's findings join
// the verdict's, and a Preflighter's own checks run before the no-fault case.

// toolPreflight runs the tool's own preflight, when it has one.
func toolPreflight(ctx context.Context, t tool.Tool) error {
	if p, ok := t.(tool.Preflighter); ok {
		return p.Preflight(ctx)
	}
	return nil
}

// invocableReason names, for a tool whose preflight has states of its own,
// the state the no-fault case proves, and leads with what the tool's own
// layer found (an MCP server that died, hung or answered a JSON-RPC error):
// that, more than an empty stdout, says why the tool is not invocable. An
// agent under test leads with what the rig found of the agent (no answer,
// a loop, garbage).
func invocableReason(t tool.Tool, reason string, findings []report.Violation) string {
	_, preflighter := t.(tool.Preflighter)
	_, agent := t.(tool.Agent)
	if !preflighter && !agent {
		return reason
	}
	var b strings.Builder
	b.WriteString("invocable: ")
	if agent {
		b.Reset()
		b.WriteString("the agent: ")
	}
	for _, f := range findings {
		b.WriteString(f.Rule + ": " + f.Detail + "; ")
	}
	return b.String() + reason
}

// withAnswer adds what an Answerer reported to the verdict: its findings,
// and any secret in what its caller was shown that is not already in the
// result on stdout (the verdict reports that one). A finding fails the case.
func withAnswer(v verdict.Verdict, a *tool.Answer, secrets []secret.Secret, stdout []byte) verdict.Verdict {
	if a == nil {
		return v
	}
	for _, f := range a.Findings {
		v.Violations = append(v.Violations, report.Violation{Assertion: f.Assertion, Rule: f.Rule, Detail: f.Detail})
	}
	for _, s := range secrets {
		if len(s.Data) > 0 && bytes.Contains(a.Shown, s.Data) && !bytes.Contains(stdout, s.Data) {
			v.Violations = append(v.Violations, report.Violation{Assertion: report.AssertEvidence, Rule: verdict.RuleSecret,
				Detail: "the " + s.Name + " appears in what the tool's caller is shown (MCP content)"})
		}
	}
	if len(v.Violations) > 0 {
		v.Status = report.Fail
	}
	return v
}
