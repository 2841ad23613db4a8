package rig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/agentrun"
	"github.com/sshrig/sshrig/internal/procs"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

// agentCommand is the command line of a Python agent, with the example
// agents' MCP client on its path.
func agentCommand(t *testing.T, script string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the example agents are Python (apt-get install python3)")
	}
	examples, err := filepath.Abs(repoFile(t, "docs/examples"))
	if err != nil {
		t.Fatal(err)
	}
	path, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(append([]string{"env", "PYTHONPATH=" + examples, "python3", path}, args...), " ")
}

// runAgent runs the agent on the agent matrix's cases globs select, in a
// run directory whose log must agree with its report.
func runAgent(t *testing.T, command string, o agentrun.Options, globs []string, budget time.Duration) *report.Report {
	t.Helper()
	tl, err := agentrun.New(command, o)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := matrix.Select(matrix.AgentMatrix(), globs)
	if err != nil {
		t.Fatal(err)
	}
	if budget > 0 {
		for i := range cases {
			cases[i].Budget = budget
		}
	}
	rep, dir := runLogged(t, Options{Tool: tl, Cases: cases})
	// The hash-chained log holds every call and every final answer of each
	// case run the report shows (a case run again alone, on a busy machine,
	// has its first run logged besides, under its own correlation id).
	raw, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]map[string]int{} // correlation id -> event -> count
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e struct {
			Event         string `json:"event"`
			CorrelationID string `json:"correlation_id"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if logged[e.CorrelationID] == nil {
			logged[e.CorrelationID] = map[string]int{}
		}
		logged[e.CorrelationID][e.Event]++
	}
	for _, c := range append([]report.CaseReport{*rep.Preflight.Case}, rep.Cases...) {
		if c.Agent == nil {
			t.Errorf("%s: no agent record", c.ID)
			continue
		}
		got := logged[c.CorrelationID]
		if got["agent_call"] != len(c.Agent.Calls) || got["agent_answer"] != len(c.Agent.Answers) {
			t.Errorf("%s: the event log holds %d calls and %d answers, the report %d and %d",
				c.ID, got["agent_call"], got["agent_answer"], len(c.Agent.Calls), len(c.Agent.Answers))
		}
	}
	return rep
}

// TestAgentExamples: the honest example agent passes every case; the naive
// one fails each cut after the create's request left with transition and
// blind_retry, each cut in its read-back with blind_retry (it creates
// again), each cut before the note's answer with transition (it notes
// again), and the refusals with mutated_after_denial; the one that
// keeps approvals fails the fresh process with approval_reused and nothing
// else.
func TestAgentExamples(t *testing.T) {
	t.Parallel()
	t.Run("honest", func(t *testing.T) {
		t.Parallel()
		rep := runAgent(t, agentCommand(t, repoFile(t, "docs/examples/agent-honest.py")), agentrun.Options{}, nil, 0)
		for _, c := range rep.Cases {
			if c.Verdict != report.Pass {
				t.Errorf("%s: %s %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
			}
			if c.Agent == nil || len(c.Agent.Calls) == 0 {
				t.Errorf("%s: no agent calls in the report", c.ID)
			}
		}
		for _, id := range []string{"approval.deny", "approval.silent"} {
			c := caseByID(t, rep, id)
			if c.Agent == nil || c.Agent.DeniedAt.IsZero() || c.Agent.ConnectionsAfterDenial == nil || *c.Agent.ConnectionsAfterDenial != 0 {
				t.Errorf("%s: want a refusal and, from the server's events, no connection after it; got %+v", id, c.Agent)
			}
			if c.Reported == nil || c.Reported.Category != result.AuthorizationDenied {
				t.Errorf("%s: reported %+v, want authorization_denied", id, c.Reported)
			}
		}
		if c := caseByID(t, rep, "agent.create.finished.reset"); c.Steps != "create -> outcome_unknown -> lookup -> found -> lookup -> found -> attach_note" {
			t.Errorf("agent.create.finished.reset: steps %q", c.Steps)
		}
		// A lost read-back is read again; a lost note is not attached again.
		if c := caseByID(t, rep, "agent.lookup.exec.reset"); c.Steps != "create -> lookup -> lost -> lookup -> found -> attach_note" {
			t.Errorf("agent.lookup.exec.reset: steps %q", c.Steps)
		}
		if c := caseByID(t, rep, "agent.note.finished.reset"); c.Steps != "create -> lookup -> found -> attach_note -> outcome_unknown" ||
			c.Reported == nil || c.Reported.Category != result.OutcomeUnknown {
			t.Errorf("agent.note.finished.reset: steps %q, reported %+v; want the note's outcome unknown", c.Steps, c.Reported)
		}
	})
	t.Run("naive", func(t *testing.T) {
		t.Parallel()
		rep := runAgent(t, agentCommand(t, repoFile(t, "docs/examples/agent-naive.py")), agentrun.Options{ApprovalWait: 200 * time.Millisecond}, nil, 0)
		for _, id := range []string{"agent.create.exec.reset.hangup", "agent.create.started.reset.survive", "agent.create.finished.reset", "agent.create.started.blackhole.survive"} {
			c := caseByID(t, rep, id)
			if c.Verdict != report.Fail || !hasRule(c, verdict.RuleTransition) {
				t.Errorf("%s: %s %v, want a transition failure", id, c.Verdict, c.Violations)
			}
		}
		for _, id := range []string{"agent.create.finished.reset", "agent.lookup.exec.reset", "agent.lookup.finished.reset", "agent.lookup.exec.blackhole"} {
			if c := caseByID(t, rep, id); !hasRule(c, verdict.RuleBlindRetry) {
				t.Errorf("%s: %v, want blind_retry: two records", id, c.Violations)
			}
		}
		for _, id := range []string{"agent.note.exec.reset.hangup", "agent.note.finished.reset"} {
			if c := caseByID(t, rep, id); !hasRule(c, verdict.RuleTransition) || !hasRule(c, verdict.RuleUnsafeCategory) {
				t.Errorf("%s: %v, want transition (a second note) and unsafe_category (success claimed)", id, c.Violations)
			}
		}
		for _, id := range []string{"approval.deny", "approval.silent"} {
			if c := caseByID(t, rep, id); !hasRule(c, verdict.RuleAgentMutatedAfterDenial) {
				t.Errorf("%s: %v, want mutated_after_denial", id, c.Violations)
			}
		}
		for _, id := range []string{"agent.none", "approval.approve"} {
			if c := caseByID(t, rep, id); c.Verdict != report.Pass {
				t.Errorf("%s: %s %v: a naive agent with nothing cut is right", id, c.Verdict, c.Violations)
			}
		}
	})
	// Through MCP elicitation (no approve calls), the person the rig plays
	// is reached by the agent's host: relayed, every approval case passes;
	// a host that accepts every prompt itself fails each with
	// approval_forged, refusals and approvals alike.
	t.Run("elicitation", func(t *testing.T) {
		t.Parallel()
		rep := runAgent(t, agentCommand(t, repoFile(t, "docs/examples/agent-honest.py"), "--elicit"), agentrun.Options{}, []string{"approval.*"}, 0)
		for _, c := range rep.Cases {
			if c.Verdict != report.Pass || c.Agent == nil || c.Agent.Prompts == 0 {
				t.Errorf("%s: %s %v %s; want a pass, with prompts", c.ID, c.Verdict, c.Violations, c.Reason)
				continue
			}
			for _, call := range c.Agent.Calls {
				if call.Tool == agentrun.ToolApprove {
					t.Errorf("%s: the agent called approve; its approvals were to come by elicitation", c.ID)
				}
			}
		}
	})
	t.Run("elicitation, yes to all", func(t *testing.T) {
		t.Parallel()
		rep := runAgent(t, agentCommand(t, repoFile(t, "docs/examples/agent-honest.py"), "--elicit-approve-all"), agentrun.Options{}, []string{"approval.*"}, 0)
		for _, c := range rep.Cases {
			if c.Verdict != report.Fail || !hasRule(c, verdict.RuleAgentApprovalForged) {
				t.Errorf("%s: %s %v; want approval_forged", c.ID, c.Verdict, c.Violations)
			}
		}
	})
	t.Run("reuse-approval", func(t *testing.T) {
		t.Parallel()
		rep := runAgent(t, agentCommand(t, repoFile(t, "docs/examples/agent-reuse-approval.py")), agentrun.Options{}, []string{"approval.*"}, 0)
		for _, c := range rep.Cases {
			reused := hasRule(c, verdict.RuleAgentApprovalReused)
			if want := c.ID == "approval.fresh-process"; reused != want || (c.Verdict == report.Pass) == want {
				t.Errorf("%s: %s %v; want approval_reused exactly at approval.fresh-process", c.ID, c.Verdict, c.Violations)
			}
			// Its second process changed nothing (the rig refused the
			// reused approval) and says so: the refusal is its honest
			// answer, whatever the first process created.
			if c.ID == "approval.fresh-process" && len(c.Violations) != 1 {
				t.Errorf("%s: %v; want approval_reused alone", c.ID, c.Violations)
			}
		}
	})
}

// TestBadAgents: an agent that never answers, one that loops on calls and
// one that prints prose each get a finding of their own, and nothing of
// theirs is left running. The preflight (the run task, no fault) is where
// the rig meets them first: the run stops there, with the finding as the
// reason.
func TestBadAgents(t *testing.T) {
	t.Parallel()
	tag := fmt.Sprintf("sshrig-mute-child-%d", time.Now().UnixNano())
	for _, tc := range []struct {
		script, rule string
		args         []string
	}{
		{"mute.py", verdict.RuleAgentNoAnswer, []string{tag}},
		{"loop.py", verdict.RuleAgentLoop, nil},
		{"garbage.py", verdict.RuleAgentGarbage, nil},
	} {
		t.Run(tc.script, func(t *testing.T) {
			t.Parallel()
			cmd := agentCommand(t, filepath.Join("testdata/agents", tc.script), tc.args...)
			tl, err := agentrun.New(cmd, agentrun.Options{MaxCalls: 5})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := Run(ctx, Options{Tool: tl, Cases: matrix.AgentMatrix()[:1], Budget: 2 * time.Second})
			var pe *report.PreflightError
			if !errors.As(err, &pe) || rep == nil || rep.Preflight.Case == nil {
				t.Fatalf("Run: %v; want the preflight to stop the run", err)
			}
			if pre := rep.Preflight; !hasRule(*pre.Case, tc.rule) || !strings.HasPrefix(pre.Error, "the agent: "+tc.rule+": ") {
				t.Errorf("preflight: %v, %q; want %s first", pre.Case.Violations, pre.Error, tc.rule)
			}
			if left := procs.Named(tag); tc.script == "mute.py" && len(left) > 0 {
				t.Errorf("the mute agent's child is still running: pids %v", left)
			}
		})
	}
}
