package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
)

func TestLinesOf(t *testing.T) {
	in := "c-1 start 1 2\nc-10 start 1 2\nc-1 complete 0 1 2\n" + strings.Repeat("x", 100<<10) + " c-1 \nc-2 start\nc-1 start 3 4"
	got, err := linesOf(strings.NewReader(in), "c-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "c-1 start 1 2\nc-1 complete 0 1 2\nc-1 start 3 4\n"; string(got) != want {
		t.Fatalf("linesOf = %q, want %q", got, want)
	}
	if got, _ := linesOf(strings.NewReader(""), "c-1"); got == nil || len(got) != 0 {
		t.Fatalf("an empty ledger read is %v, want empty and not nil", got)
	}
}

// TestTruthWithoutFollower: where the follower cannot run, or broke, the
// truth's reading over SSH falls back to a session of its own per case, and
// every truth is still right: a completed case, a case cut while its command
// ran (survive: it completes), and one whose command never started.
func TestTruthWithoutFollower(t *testing.T) {
	for _, how := range []string{"none", "broken"} {
		t.Run(how, func(t *testing.T) {
			env := startEnv(t, Options{})
			link := env.link.Load()
			switch how {
			case "none":
				link.follower.Close()
				link.follower = nil
			case "broken":
				link.follower.Close() // every reading from it now fails
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, mc := range []matrixCase{{fault.None, fault.Reset, fault.Survive}, {fault.Started, fault.Reset, fault.Survive}, {fault.Exec, fault.Reset, fault.Survive}} {
				_, ev := runCase(t, ctx, env, mc)
				if ev.ProbeErr != "" {
					t.Fatalf("%s: probe error %s", mc, ev.ProbeErr)
				}
				if want := ExpectTruth(mc.m, mc.cut, mc.d); ev.Truth.State != want || !ev.Truth.Agree() {
					t.Errorf("%s: truth %s (%s), want %s", mc, ev.Truth, ev.Truth.Disagreement, want)
				}
			}
		})
	}
}
