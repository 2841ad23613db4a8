package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
)

// complete runs 'sshrig __complete ARGS…' and returns the values suggested
// (descriptions dropped).
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"__complete"}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, stderr.String())
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if strings.HasPrefix(line, ":") { // the directive
			continue
		}
		v, _, _ := strings.Cut(line, "\t")
		out = append(out, v)
	}
	return out
}

// Acceptance: `sshrig __complete run --tool ”` suggests reference and
// every mutant; `--cases ”` suggests every case id.
func TestCompletion(t *testing.T) {
	got := complete(t, "run", "--tool", "")
	for _, name := range tools.Names() {
		if !slices.Contains(got, name) {
			t.Errorf("--tool '': %s not suggested (got %q)", name, got)
		}
	}
	if got := complete(t, "run", "--tool", "mutant:blind"); !slices.Equal(got, []string{"mutant:blind-retry"}) {
		t.Errorf("--tool mutant:blind: %q", got)
	}
	got = complete(t, "run", "--cases", "")
	for _, c := range matrix.DefaultMatrix() {
		if !slices.Contains(got, c.ID) {
			t.Errorf("--cases '': %s not suggested", c.ID)
		}
		if c.Alias != "" && !slices.Contains(got, c.Alias) {
			t.Errorf("--cases '': alias %s not suggested", c.Alias)
		}
	}
	if !slices.Contains(got, "step.*") {
		t.Errorf("--cases '': step.* not suggested")
	}
	// The last glob of a list is completed, the ones before kept.
	got = complete(t, "run", "--cases", "none.*,started.reset.s")
	if !slices.Equal(got, []string{"none.*,started.reset.survive"}) {
		t.Errorf("--cases none.*,started.reset.s: %q", got)
	}
	if got := complete(t, "run", "--target", ""); !slices.Equal(got, []string{"embedded", "container"}) {
		t.Errorf("--target '': %q", got)
	}
	if got := complete(t, "reconcile", "--target", "c"); !slices.Equal(got, []string{"container"}) {
		t.Errorf("reconcile --target c: %q", got)
	}
}
