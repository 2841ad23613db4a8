package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/matrix"
)

// TestServerFaultsFlags: sshrig cases --server-faults lists the three
// families; sshrig run --server-faults runs them, and a replay finds a
// server-fault case by its id; combinations that cannot hold are usage
// errors that say why.
func TestServerFaultsFlags(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"cases", "--server-faults"}, &out, &errb); code != exitPass {
		t.Fatalf("cases --server-faults: exit %d: %s", code, errb.String())
	}
	ids := strings.Fields(out.String())
	if len(ids) != len(matrix.ServerMatrix()) {
		t.Fatalf("cases --server-faults listed %d cases, want the %d of matrix/server.yaml", len(ids), len(matrix.ServerMatrix()))
	}
	for _, family := range []string{"server-crash.", "reboot.", "no-exit-status."} {
		if !strings.Contains(out.String(), "\n"+family) {
			t.Errorf("cases --server-faults lists no %s* case:\n%s", family, out.String())
		}
	}

	dir := t.TempDir()
	code, _, stderr, _ := sshrigIn(t, dir, "run", "--server-faults", "--cases", "server-crash.started.hangup,no-exit-status.close")
	if code != exitPass {
		t.Fatalf("run --server-faults: exit %d:\n%s", code, stderr)
	}
	var rout, rerr strings.Builder
	if code := run(context.Background(), []string{"replay", dir, "no-exit-status.close"}, &rout, &rerr); code != exitPass {
		t.Fatalf("replay of a server-fault case: exit %d:\n%s%s", code, rout.String(), rerr.String())
	}

	crashAtStep := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(crashAtStep, []byte("cases:\n  - {id: x, moment: started, cut: eof-only}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "--server-faults", "--jump"}, "leave --jump and --hosts out"},
		{[]string{"run", "--server-faults", "--hosts", "3"}, "leave --jump and --hosts out"},
		{[]string{"run", "--server-faults", "--matrix", crashAtStep}, "give it or --matrix, not both"},
		{[]string{"run", "--matrix", crashAtStep}, "eof-only cannot be made at moment started: it needs one of finished"},
	} {
		code, _, stderr, _ := sshrigIn(t, t.TempDir(), bad.args...)
		if code != exitUsage || !strings.Contains(stderr, bad.says) {
			t.Errorf("%v: exit %d, want %d (usage) saying %q:\n%s", bad.args, code, exitUsage, bad.says, stderr)
		}
	}
}
