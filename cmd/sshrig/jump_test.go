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

	for _, bad := range [][]string{
		{"run", "--cases", "jump.*"},                                     // no jump case in the default matrix
		{"run", "--jump", "--cases", "started.*"},                        // none of the jump matrix is started.*
		{"run", "--jump", "--cases", "step.*"},                           // step cases are not made behind a jump host
		{"run", "--jump", "--matrix", "../../docs/examples/matrix.yaml"}, // a file whose cases name no hop
	} {
		code, _, stderr, _ := sshrigIn(t, t.TempDir(), bad...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (usage):\n%s", bad, code, exitUsage, stderr)
		}
	}
}
