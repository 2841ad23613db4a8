package rig

import (
	"strings"
	"testing"
	"time"
)

func TestParseCPUStat(t *testing.T) {
	st, ok := parseCPUStat([]byte("cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\nintr 1\nprocs_running 7\nprocs_blocked 0\n"))
	if !ok || st.total != 980 || st.busy != 160 || st.running != 7 {
		t.Fatalf("%+v %v, want total 980, busy 160, running 7", st, ok)
	}
	for _, bad := range []string{"", "cpu 1 2\n", "cpu a b c d e\n", "procs_running 3\n"} {
		if _, ok := parseCPUStat([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, ok := readCPUStat(); !ok {
		t.Error("this machine's /proc/stat does not parse")
	}
}

func FuzzParseCPUStat(f *testing.F) {
	f.Add([]byte("cpu  100 5 50 800 20 3 2 0 0 0\nprocs_running 7\n"))
	f.Add([]byte("cpu 1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := parseCPUStat(b)
		if ok && st.busy > st.total {
			t.Fatalf("busy %d above total %d", st.busy, st.total)
		}
	})
}

func TestChooseParallel(t *testing.T) {
	budget := 5 * time.Second
	for _, tc := range []struct {
		name     string
		explicit int
		c        cost
		want     int
		says     string
	}{
		{"cheap tool, quiet machine", 0, cost{cpu: 30 * time.Millisecond, wall: 100 * time.Millisecond, cores: 2, measured: true}, DefaultParallel, "the most by default"},
		// 0.45 s of CPU a case: 2 cores × 1.25 s / 0.45 s = 5.6 cases' worth.
		{"slow start, quiet machine", 0, cost{cpu: 450 * time.Millisecond, wall: 500 * time.Millisecond, cores: 2, measured: true}, 5, "more than 5 at once"},
		{"slow start, two hogs", 0, cost{cpu: 450 * time.Millisecond, wall: 700 * time.Millisecond, cores: 2, background: 2, measured: true}, minSized, "other work wanting 2.0 cores' worth"},
		{"slow start, saturated", 0, cost{cpu: 450 * time.Millisecond, wall: 3 * time.Second, cores: 2, background: 20, measured: true}, minSized, "at least 4 at once"},
		// 2 × 1.25 s / 0.1 s = 25 cases alone; other work takes all but a quarter.
		{"cheap tool, saturated", 0, cost{cpu: 100 * time.Millisecond, wall: time.Second, cores: 2, background: 30, measured: true}, 6, "a fairer share"},
		{"reference, saturated", 0, cost{cpu: 30 * time.Millisecond, wall: time.Second, cores: 2, background: 30, measured: true}, DefaultParallel, "the most by default"},
		{"explicit", 2, cost{cpu: 30 * time.Millisecond, wall: 100 * time.Millisecond, cores: 2, measured: true}, 2, "set by --parallel"},
		{"explicit above the default", 40, cost{cores: 2}, 40, "set by --parallel"},
		{"nothing measured", 0, cost{cores: 2}, DefaultParallel, "their load unknown"},
	} {
		p := chooseParallel(tc.explicit, budget, tc.c)
		if p.Chosen != tc.want || !strings.Contains(p.Why, tc.says) || p.Explicit != (tc.explicit > 0) {
			t.Errorf("%s: %+v, want %d and %q", tc.name, p, tc.want, tc.says)
		}
	}
}

// TestCostProbe: the probe sees CPU this process spends.
func TestCostProbe(t *testing.T) {
	p := startCostProbe()
	begin, start := processCPU(), time.Now()
	// Spin until 50ms of CPU and of wall time were spent: the process's
	// CPU counts every thread, so it can run ahead of the wall clock.
	for processCPU()-begin < 50*time.Millisecond || time.Since(start) < 50*time.Millisecond {
	}
	c := p.finish()
	if c.cpu < 50*time.Millisecond || c.wall < 50*time.Millisecond || c.cores < 1 {
		t.Fatalf("%+v after 50ms of CPU", c)
	}
}
