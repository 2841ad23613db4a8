package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cases --hosts lists the fleet matrix; a fleet that is no fleet, a fleet
// behind a jump host, and a case cutting as many hosts as there are are
// usage errors before anything starts.
func TestFleetFlags(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"cases", "--hosts", "5"}, &out, &errb); code != exitPass {
		t.Fatalf("cases --hosts 5: exit %d: %s", code, errb.String())
	}
	if ids := strings.Fields(out.String()); len(ids) != 14 || ids[0] != "fleet.refuse" {
		t.Fatalf("cases --hosts 5 listed %d cases (%v), want the 14 of matrix/fleet.yaml", len(ids), ids)
	}
	cutTwo := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(cutTwo, []byte("cases:\n  - {id: x, moment: started, cut: reset, cut_hosts: 2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "--hosts", "1"}, "a fleet has 2 to 64"},
		{[]string{"run", "--hosts", "65"}, "a fleet has 2 to 64"},
		{[]string{"run", "--hosts", "3", "--jump"}, "give --hosts or --jump, not both"},
		{[]string{"run", "--hosts", "2", "--cases", "fleet.started.reset.two-hosts"}, "leaves none uncut"},
		{[]string{"run", "--matrix", cutTwo}, "needs a fleet: run with --hosts N"},
		{[]string{"run", "--hosts", "3", "--cases", "step.*"}, "not made behind a jump host or on a fleet"},
	} {
		code, _, stderr, _ := sshrigIn(t, t.TempDir(), bad.args...)
		if code != exitUsage || !strings.Contains(stderr, bad.says) {
			t.Errorf("%v: exit %d, want %d (usage) saying %q:\n%s", bad.args, code, exitUsage, bad.says, stderr)
		}
	}
}
