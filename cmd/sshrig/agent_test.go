package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReplayAgentKeepsItsLimits: an agent run's limits go into its report,
// and a replay of one of its cases runs under them: approval.approve asks
// twice, so at --max-prompts 1 it fails with approval_fatigue, run and
// replayed alike (under the default limit of 3 the replay would pass).
func TestReplayAgentKeepsItsLimits(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the example agents are Python (apt-get install python3)")
	}
	t.Parallel()
	agent, err := filepath.Abs("../../docs/examples/agent-honest.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, _, stderr, rep := sshrigIn(t, dir, "agent", "--agent", "python3 "+agent, "--cases", "approval.approve", "--max-prompts", "1")
	if code != exitFail || !slices.Contains(caseRules(rep)["approval.approve"], "approval_fatigue") {
		t.Fatalf("run: exit %d, rules %v; want approval_fatigue:\n%s", code, caseRules(rep), stderr)
	}
	if settings, _ := rep["tool_settings"].(map[string]any); settings["max-prompts"] != "1" {
		t.Fatalf("the report's tool settings: %v; want max-prompts 1", rep["tool_settings"])
	}
	again := t.TempDir()
	var stdout, errb strings.Builder
	code = run(context.Background(), []string{"replay", dir, "approval.approve", "--out", again}, &stdout, &errb)
	b, _ := os.ReadFile(filepath.Join(again, "report.json"))
	replayed := map[string]any{}
	json.Unmarshal(b, &replayed)
	// Exit 0: the replay reproduced the recorded verdict.
	if code != exitPass || !slices.Contains(caseRules(replayed)["approval.approve"], "approval_fatigue") {
		t.Fatalf("replay: exit %d, rules %v; want approval_fatigue as in the run:\n%s%s", code, caseRules(replayed), stdout.String(), errb.String())
	}
}
