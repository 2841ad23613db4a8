package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyTamperedLogs runs a real (small) run, then tampers with copies of
// its event log in every way the issue names: verify must fail and name the
// line each time, and pass the untouched log.
func TestVerifyTamperedLogs(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "run")
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"run", "-q", "--cases", "none.exit0,started.reset.survive", "--out", dir}, &out, &errb); code != exitPass {
		t.Fatalf("run exited %d: %s", code, errb.String())
	}
	verify := func(args ...string) (int, string) {
		var o, e bytes.Buffer
		code := run(ctx, append([]string{"verify"}, args...), &o, &e)
		return code, o.String() + e.String()
	}
	if code, msg := verify(dir); code != exitPass || !strings.Contains(msg, "intact") {
		t.Fatalf("untouched run: exit %d: %s", code, msg)
	}
	orig, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(orig), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	if len(lines) < 20 {
		t.Fatalf("only %d log lines", len(lines))
	}
	join := func(ls []string) string { return strings.Join(ls, "") }
	// A change that keeps the line well-formed: the deadline of a request.
	mod := -1
	for i, l := range lines {
		if i > 3 && strings.Contains(l, `"deadline_ms":5000`) {
			mod = i
			break
		}
	}
	if mod < 0 {
		t.Fatal("no request_built line to modify")
	}
	modified := append([]string{}, lines...)
	modified[mod] = strings.Replace(lines[mod], `"deadline_ms":5000`, `"deadline_ms":9000`, 1)
	without := func(i int) []string { return append(append([]string{}, lines[:i]...), lines[i+1:]...) }
	for _, tc := range []struct {
		name string
		log  string
		want string
	}{
		{"modified", join(modified), fmt.Sprintf("line %d: modified", mod+1)},
		{"deleted", join(without(12)), "line 13"},
		{"inserted", join(append(append(append([]string{}, lines[:5]...), lines[7]), lines[5:]...)), "line 6"},
		{"swapped", join(append(append(append(append([]string{}, lines[:14]...), lines[15]), lines[14]), lines[16:]...)), "line 15"},
		{"truncated", join(lines[:len(lines)-3]), "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tampered := filepath.Join(t.TempDir(), "run")
			os.MkdirAll(tampered, 0o755)
			report, _ := os.ReadFile(filepath.Join(dir, "report.json"))
			os.WriteFile(filepath.Join(tampered, "report.json"), report, 0o644)
			os.WriteFile(filepath.Join(tampered, "events.jsonl"), []byte(tc.log), 0o644)
			code, msg := verify(tampered)
			if code != exitFail || !strings.Contains(msg, "tampered") || !strings.Contains(msg, tc.want) {
				t.Fatalf("exit %d, %q; want exit 1 naming %q", code, msg, tc.want)
			}
			t.Logf("%s: %s", tc.name, strings.TrimSpace(msg))
		})
	}
	if code, msg := verify(filepath.Join(t.TempDir(), "nothing-here")); code != exitUsage {
		t.Fatalf("missing run: exit %d: %s", code, msg)
	}
}
