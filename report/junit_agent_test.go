package report

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/tool"
)

// agentCase is an agent case run that saw an outcome_unknown create, looked
// the record up, asked for an approval the person refused, and then called
// a tool the rig did not run.
func agentCase() CaseReport {
	t0 := time.Date(2026, 12, 7, 4, 25, 51, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	none := 0
	return CaseReport{ID: "approval.deny", CorrelationID: "c-1", Verdict: Fail,
		Violations: []Violation{{Assertion: AssertNoBlind, Rule: "mutated_after_denial", Detail: "…"}},
		Agent: &AgentReport{AgentRun: tool.AgentRun{
			Calls: []tool.AgentCall{
				{Process: 1, Tool: "create_record", Start: at(0), End: at(90), IsError: true,
					Result: `{"category":"outcome_unknown","retry":"reconcile_first","ok":false}`},
				{Process: 1, Tool: "lookup_record", Start: at(100), End: at(120),
					Result: `{"category":"succeeded","retry":"never","found":true,"record_id":"rec-c-1"}`},
				{Process: 1, Tool: "approve", Start: at(130), End: at(131), IsError: true,
					Result: `{"action":"attach_note","decision":"denied"}`},
				{Process: 1, Tool: "attach_note", Start: at(140), End: at(141), IsError: true,
					Result:  `{"category":"authorization_denied","retry":"never"}`,
					Refused: "the person refused earlier in this task; nothing was run"},
			},
			Prompts:  1,
			DeniedAt: at(131),
			Answers:  []string{`{"ok": false, "category": "authorization_denied"}`},
		}, ConnectionsAfterDenial: &none},
	}
}

// A case with an agent lists, in its testcase's system-out, the agent's
// calls in order, one a line, then the prompts, the refusal and the
// connections after it, and the final answer.
func TestJUnitListsAgentCalls(t *testing.T) {
	b, err := (&Report{Tool: "agent-mcp:x", Target: "embedded", Cases: []CaseReport{agentCase()}}).JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	out := got.Suites[0].Cases[0].SystemOut
	want := []string{
		"agent calls:",
		"1 create_record -> outcome_unknown/reconcile_first",
		"2 lookup_record -> succeeded/never found rec-c-1",
		"3 approve -> denied",
		"4 attach_note -> refused: the person refused earlier in this task; nothing was run",
		"4 calls; approval prompts: 1; the person refused (or did not answer) at 04:25:51.131; 0 connections after the refusal",
		`final answer: {"ok": false, "category": "authorization_denied"}`,
	}
	if !strings.Contains(out, strings.Join(want, "\n")) {
		t.Errorf("system-out:\n%s\nwant these lines in a row:\n%s", out, strings.Join(want, "\n"))
	}
}

// Where a case ran two agent processes, each call and answer names its
// process; a case without an agent says nothing of one.
func TestJUnitAgentProcessesNamed(t *testing.T) {
	c := agentCase()
	c.Agent.Calls[3].Process = 2
	c.Agent.Answers = append(c.Agent.Answers, "")
	if got, want := c.Agent.CallLine(c.Agent.Calls[3]), "attach_note (process 2) -> refused: the person refused earlier in this task; nothing was run"; got != want {
		t.Errorf("call line %q, want %q", got, want)
	}
	out := caseRunText(c)
	if !strings.Contains(out, "\nfinal answer of process 2: (none printed)") {
		t.Errorf("system-out has no line for process 2's missing answer:\n%s", out)
	}
	c.Agent = nil
	if out := caseRunText(c); strings.Contains(out, "agent") {
		t.Errorf("a case without an agent speaks of one:\n%s", out)
	}
}
