package htmlreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/tool"
)

var agentT0 = time.Unix(1000, 0)

func agentAt(ms int) time.Time { return agentT0.Add(time.Duration(ms) * time.Millisecond) }

// agentRun is a run of two case runs of one agent: approval.deny, whose
// agent saw an outcome_unknown create, looked it up, was refused an
// approval and called a tool the rig then ran nothing for; and agent.none,
// whose agent record was lost, to be drawn as any other case.
func agentRun() *Run {
	none := 0
	deny := report.CaseReport{ID: "approval.deny", CorrelationID: "c-deny", Verdict: report.Fail,
		Violations: []report.Violation{{Assertion: report.AssertNoBlind, Rule: "mutated_after_denial", Detail: "…"}},
		Agent: &report.AgentReport{AgentRun: tool.AgentRun{
			Calls: []tool.AgentCall{
				{Process: 1, Tool: "create_record", Start: agentAt(10), End: agentAt(90), IsError: true,
					Result: `{"category":"outcome_unknown","retry":"reconcile_first"}`},
				{Process: 1, Tool: "lookup_record", Start: agentAt(100), End: agentAt(120),
					Result: `{"category":"succeeded","retry":"never","found":true,"record_id":"rec-c-deny"}`},
				{Process: 1, Tool: "approve", Start: agentAt(130), End: agentAt(131), IsError: true,
					Result: `{"action":"attach_note","decision":"denied"}`},
				{Process: 1, Tool: "attach_note", Start: agentAt(140), End: agentAt(141), IsError: true,
					Result:  `{"category":"authorization_denied","retry":"never"}`,
					Refused: "the person refused earlier in this task; nothing was run"},
			},
			Prompts:  1,
			DeniedAt: agentAt(131),
			Answers:  []string{`{"ok": false, "category": "authorization_denied"}`},
		}, ConnectionsAfterDenial: &none},
	}
	plain := report.CaseReport{ID: "agent.none", CorrelationID: "c-none", Verdict: report.Pass}
	evs := func(corr string) []event {
		return []event{
			{Time: agentT0, Source: "rig", Event: "dispatch_started", Corr: corr},
			{Time: agentAt(150), Source: "tool", Event: "tool_returned", Corr: corr},
			{Time: agentAt(160), Source: "rig", Event: "verdict", Corr: corr, Data: map[string]any{"verdict": "pass"}},
		}
	}
	return &Run{Name: "agent", Report: &report.Report{Tool: "agent-mcp:x", Target: "embedded", Cases: []report.CaseReport{deny, plain}},
		events: map[string][]event{"c-deny": evs("c-deny"), "c-none": evs("c-none")}}
}

// An agent's calls are drawn in a lane of their own, one bar each from its
// start to its end, in order, said as JUnit says them: an error where the
// agent was told of one, hollow where the rig ran nothing; the person's
// refusal is a mark of its own. A case without an agent draws no such lane.
func TestAgentLaneDrawn(t *testing.T) {
	r := agentRun()
	labels := &labelTab{idx: map[string]int{}}
	deny := r.Report.Cases[0]
	tl := drawCase(deny, r.events["c-deny"], labels)
	if !tl.Agent {
		t.Error("the agent's timeline does not ask for its lane")
	}
	type bar struct {
		from, to int
		label    string
		cls      int
	}
	var bars []bar
	for _, s := range tl.Spans {
		if s[0] == laneAgent {
			bars = append(bars, bar{s[1], s[2], labels.list[s[3]], s[4]})
		}
	}
	want := []bar{
		{100, 900, "create_record -> outcome_unknown/reconcile_first", clsBad},
		{1000, 1200, "lookup_record -> succeeded/never found rec-c-deny", clsPlain},
		{1300, 1310, "approve -> denied", clsBad},
		{1400, 1410, "attach_note -> refused: the person refused earlier in this task; nothing was run", clsRefused},
	}
	if len(bars) != len(want) {
		t.Fatalf("agent lane bars %+v, want %+v", bars, want)
	}
	for i := range want {
		if bars[i] != want[i] {
			t.Errorf("bar %d: %+v, want %+v", i+1, bars[i], want[i])
		}
	}
	var refusals []string
	for _, p := range tl.Points {
		if p[0] == laneAgent {
			if p[1] != 1310 || p[3] != clsCut {
				t.Errorf("agent lane point at %d, class %d: %q; want the refusal at 1310, drawn as a cut", p[1], p[3], labels.list[p[2]])
			}
			refusals = append(refusals, labels.list[p[2]])
		}
	}
	if len(refusals) != 1 || refusals[0] != "the person refused (or did not answer): 0 connections after" {
		t.Errorf("refusal marks %q, want one naming the connections after it", refusals)
	}

	plain := drawCase(r.Report.Cases[1], r.events["c-none"], labels)
	js, _ := json.Marshal(plain)
	if plain.Agent || strings.Contains(string(js), `"a":`) {
		t.Errorf("a case without an agent asks for an agent lane: %s", js)
	}
	for _, s := range plain.Spans {
		if s[0] == laneAgent {
			t.Errorf("a case without an agent has an agent bar %v", s)
		}
	}
}

// Beside an agent's timeline the page shows its final answer and counts;
// a page without an agent shows neither, nor the legend's word on it.
func TestAgentAnswersBesideTimeline(t *testing.T) {
	r := agentRun()
	var b strings.Builder
	if err := Write(&b, []*Run{r}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<aside class="answers"><div>agent: 4 calls; approval prompts: 1; the person refused (or did not answer) at `,
		`<div>final answer:</div><pre>{&#34;ok&#34;: false, &#34;category&#34;: &#34;authorization_denied&#34;}</pre>`,
		`An agent under test has a lane of its own`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<div class="withagent">`); n != 1 {
		t.Errorf("%d timelines with an agent beside them, want 1", n)
	}

	r.Report.Cases = r.Report.Cases[1:]
	b.Reset()
	if err := Write(&b, []*Run{r}); err != nil {
		t.Fatal(err)
	}
	for _, never := range []string{`class="withagent"`, `An agent under test`} {
		if strings.Contains(b.String(), never) {
			t.Errorf("a page without an agent has %q", never)
		}
	}
}

// In the browser, the agent's case draws the agent lane with a bar per
// call, and the case without an agent draws the lanes it always had.
func TestAgentLaneInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a browser")
	}
	b := newTab(t)
	var out strings.Builder
	if err := Write(&out, []*Run{agentRun()}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.open(file)
	lanesOf := func(id string) (got struct {
		Lanes []string
		Bars  int
	}) {
		b.eval(`openCase("`+id+`"); (() => { const svg = document.querySelector('details.case[id="case-`+id+`"] svg.tl');
			return {Lanes: [...svg.querySelectorAll("text.lane")].map(e => e.textContent),
				Bars: [...svg.querySelectorAll('g.span text[data-lane="1"]')].length}; })()`, &got)
		return got
	}
	deny := lanesOf("approval.deny")
	if strings.Join(deny.Lanes, ",") != "tool,agent,cutter,server,remote command,probes" || deny.Bars != 4 {
		t.Errorf("approval.deny draws lanes %q and %d agent bars; want the agent lane with 4", deny.Lanes, deny.Bars)
	}
	b.screenshot("agent-lane")
	plain := lanesOf("agent.none")
	if strings.Join(plain.Lanes, ",") != "tool,cutter,server,remote command,probes" || plain.Bars != 0 {
		t.Errorf("agent.none draws lanes %q and %d agent bars; want no agent lane", plain.Lanes, plain.Bars)
	}
	b.noRequests()
}
