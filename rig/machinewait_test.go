package rig

import (
	"context"
	"testing"
	"time"
)

func TestParsePressureSome(t *testing.T) {
	got, ok := parsePressureSome([]byte("some avg10=1.50 avg60=0.20 avg300=0.04 total=55950065\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=12\n"))
	if !ok || got != 55950065*time.Microsecond {
		t.Fatalf("got %v %v", got, ok)
	}
	for _, bad := range []string{"", "full avg10=0.00 total=12\n", "some avg10=0.00\n", "some total=-3\n", "some total=x\n"} {
		if _, ok := parsePressureSome([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestCPUStatSteal(t *testing.T) {
	st, ok := parseCPUStat([]byte("cpu  22603 0 3089 68857 617 0 171 134 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	if !ok || st.steal != 134 {
		t.Errorf("steal %d jiffies (%v), want 134", st.steal, ok)
	}
	if st, ok := parseCPUStat([]byte("cpu  1 2 3 4\n")); !ok || st.steal != 0 {
		t.Errorf("a kernel without steal: %d (%v)", st.steal, ok)
	}
}

func FuzzParsePressureSome(f *testing.F) {
	f.Add([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, ok := parsePressureSome(b); ok && d < 0 {
			t.Fatalf("negative total %v", d)
		}
	})
}

// clockOf answers each call with the next figure (the last one from then on).
func clockOf(figures ...time.Duration) func() (time.Duration, bool) {
	return func() (time.Duration, bool) {
		d := figures[0]
		if len(figures) > 1 {
			figures = figures[1:]
		}
		return d, true
	}
}

func TestAwaitToolGivesBackTheMachinesWait(t *testing.T) {
	never := make(chan struct{})
	ctx := context.Background()
	for _, tc := range []struct {
		name            string
		clock           func() (time.Duration, bool)
		hung, givenBack bool
	}{
		{"nothing waited: a hang alone too", clockOf(0), true, true},
		{"waited, given back, no more taken", clockOf(20*time.Millisecond, 20*time.Millisecond), true, true},
		{"waited more while given back, given again", clockOf(10*time.Millisecond, 30*time.Millisecond, 30*time.Millisecond), true, true},
		{"waited more than grace: seen while busy", clockOf(3 * time.Second), true, false},
		{"pressure unknown: nothing given back", func() (time.Duration, bool) { return 0, false }, true, false},
	} {
		hung, givenBack, _ := awaitTool(ctx, never, tc.clock, time.Millisecond, 2*time.Second)
		if hung != tc.hung || givenBack != tc.givenBack {
			t.Errorf("%s: hung %v given back %v, want %v %v", tc.name, hung, givenBack, tc.hung, tc.givenBack)
		}
	}
	// A tool that answers in the time given back did not hang.
	done := make(chan struct{})
	answers := func() (time.Duration, bool) {
		select {
		case <-done:
		default:
			close(done)
		}
		return 50 * time.Millisecond, true
	}
	if hung, _, _ := awaitTool(ctx, done, answers, time.Millisecond, 5*time.Second); hung {
		t.Error("a tool that answered in the time given back hung")
	}
	// The run's end is not a hang.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if hung, _, _ := awaitTool(cctx, never, clockOf(0), time.Hour, time.Second); hung {
		t.Error("an interrupted run's tool hung")
	}
}
