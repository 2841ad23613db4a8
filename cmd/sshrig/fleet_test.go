package main

import (
	"context"
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
	for _, bad := range [][]string{
		{"run", "--hosts", "1"},
		{"run", "--hosts", "65"},
		{"run", "--hosts", "3", "--jump"},
		{"run", "--hosts", "2", "--cases", "fleet.started.reset.two-hosts"},
		{"run", "--cases", "fleet.*"},
		{"run", "--hosts", "3", "--cases", "step.*"},
	} {
		code, _, stderr, _ := sshrigIn(t, t.TempDir(), bad...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (usage):\n%s", bad, code, exitUsage, stderr)
		}
	}
}
