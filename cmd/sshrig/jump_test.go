package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run behind a jump host selects the jump matrix, lists it with cases
// --jump, records the jump host in its report and keeps it on replay; cases
// and jump host that do not fit are a usage error before anything starts.
func TestJumpRun(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"cases", "--jump"}, &out, &errb); code != exitPass {
		t.Fatalf("cases --jump: exit %d: %s", code, errb.String())
	}
	ids := strings.Fields(out.String())
	if len(ids) != 49 || ids[0] != "jump.target-dead" {
		t.Fatalf("cases --jump listed %d cases, first %q; want the 49 of matrix/jump.yaml", len(ids), ids[0])
	}

	dir := t.TempDir()
	code, _, stderr, _ := sshrigIn(t, dir, "run", "--jump", "--cases", "jump.first.started.reset.survive,jump.target-dead")
	if code != exitPass {
		t.Fatalf("run --jump: exit %d:\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil || !strings.Contains(string(b), `"jump": true`) {
		t.Fatalf("the report does not say the run went through a jump host: %v", err)
	}
	again := t.TempDir()
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"replay", dir, "jump.first.started.reset.survive", "--out", again}, &out, &errb); code != exitPass {
		t.Fatalf("replay: exit %d:\n%s%s", code, out.String(), errb.String())
	}

	hopped := filepath.Join(t.TempDir(), "hop.yaml")
	if err := os.WriteFile(hopped, []byte("cases:\n  - {id: x, moment: started, cut: reset, hop: jump-target}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "--matrix", hopped}, "needs a jump host: run with --jump"},
		{[]string{"run", "--jump", "--cases", "step.*"}, "not made behind a jump host"},
		{[]string{"run", "--jump", "--matrix", "../../docs/examples/matrix.yaml"}, "names no hop"},
	} {
		code, _, stderr, _ := sshrigIn(t, t.TempDir(), bad.args...)
		if code != exitUsage || !strings.Contains(stderr, bad.says) {
			t.Errorf("%v: exit %d, want %d (usage) saying %q:\n%s", bad.args, code, exitUsage, bad.says, stderr)
		}
	}
}
