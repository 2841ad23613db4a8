package matrix

import (
	"strings"
	"testing"

	"github.com/sshrig/sshrig/fault"
)

func TestDefaultMatrix(t *testing.T) {
	cases := DefaultMatrix()
	seen := map[string]bool{}
	moments := map[fault.Moment]bool{}
	for _, c := range cases {
		if seen[c.ID] {
			t.Errorf("duplicate id %s", c.ID)
		}
		seen[c.ID] = true
		moments[c.Moment] = true
		if c.Operation == "" {
			t.Errorf("%s: no operation", c.ID)
		}
	}
	for _, m := range fault.Moments() {
		if !moments[m] && !m.IsStep() {
			t.Errorf("no case at moment %s", m)
		}
	}
	for _, id := range []string{"started.reset.survive", "exec.close.hangup", "output.blackhole.survive", "exit-status.reset.exit3", "none.exit0", "refuse"} {
		if !seen[id] {
			t.Errorf("stable id %s missing", id)
		}
	}
	if len(cases) != 82 {
		t.Errorf("%d cases, want 82 (update docs and this test together)", len(cases))
	}
	// The file holds every transport row the generator knows.
	byID := map[string]Case{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	for _, want := range transportMatrix() {
		got, ok := byID[want.ID]
		if !ok {
			t.Errorf("default.yaml lacks %s", want.ID)
			continue
		}
		if got.Moment != want.Moment || got.Disposition != want.Disposition || got.ExitCode != want.ExitCode ||
			(want.Moment != fault.None && want.Moment != fault.Refuse && got.Cut != want.Cut) {
			t.Errorf("%s: file says %+v, want %+v", want.ID, got, want)
		}
	}
	aliases := map[string]int{}
	for _, c := range cases {
		if c.Alias != "" {
			aliases[c.Alias]++
		}
	}
	for _, a := range []string{"C01", "C02", "C03", "C04", "C05", "C06", "C07", "C08"} {
		if aliases[a] == 0 {
			t.Errorf("no case with alias %s", a)
		}
	}
}

// FuzzLoadMatrix: the loader never panics, and whatever it accepts is valid.
func FuzzLoadMatrix(f *testing.F) {
	f.Add(DefaultMatrixYAML())
	f.Add([]byte("cases:\n  - {id: a, moment: started, cut: reset}\n"))
	f.Add([]byte("cases:\n  - id: a\n    moment: none\n    expect: {category: x}\n"))
	f.Add([]byte("cases: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := LoadMatrix("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml:") {
				t.Fatalf("error without its file: %v", err)
			}
			return
		}
		if len(cases) == 0 {
			t.Fatal("loaded no cases without an error")
		}
		for _, c := range cases {
			if c.ID == "" || c.Moment == 0 || c.Disposition == 0 || c.Operation == "" {
				t.Fatalf("loaded an incomplete case %+v", c)
			}
		}
	})
}

func TestSelect(t *testing.T) {
	cases := DefaultMatrix()
	for _, tc := range []struct {
		globs []string
		want  int
		err   bool
	}{
		{nil, len(cases), false},
		{[]string{"started.*"}, 12, false},
		{[]string{"started.reset.*", "exec.reset.*"}, 6, false},
		{[]string{"C0*"}, 17, false},
		{[]string{"C04"}, 8, false},
		{[]string{"nothing.here"}, 0, true},
		{[]string{"[bad"}, 0, true},
	} {
		got, err := Select(cases, tc.globs)
		if (err != nil) != tc.err || len(got) != tc.want {
			t.Errorf("Select(%v) = %d cases, err %v; want %d, err %v", tc.globs, len(got), err, tc.want, tc.err)
		}
	}
}

// The kernel matrix is every moment x vanish x the dispositions that
// matter there, and nothing else.
// TestJumpMatrix: every case behind the jump host names its hop, loads
// valid, and both hops are cut at every moment with a cut.
func TestJumpMatrix(t *testing.T) {
	cut := map[fault.Hop]map[fault.Moment]bool{fault.ClientJump: {}, fault.JumpTarget: {}}
	for _, c := range JumpMatrix() {
		c = c.WithDefaults()
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
		if c.Hop == 0 {
			t.Errorf("%s names no hop", c.ID)
		}
		cut[c.Hop][c.Moment] = true
	}
	for hop, moments := range cut {
		for _, m := range fault.Moments() {
			if m.HasCut() && !m.IsStep() && !moments[m] {
				t.Errorf("hop %s is never cut at %s", hop, m)
			}
		}
	}
	if !cut[fault.JumpTarget][fault.Refuse] {
		t.Error("no case of a dead target behind a live jump host")
	}
}

func TestKernelMatrixMatchesTheMoments(t *testing.T) {
	got := KernelMatrix()
	want := cutMatrix([]fault.Cut{fault.Vanish}, false)
	if len(got) != len(want) {
		t.Fatalf("kernel.yaml has %d cases, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i].WithDefaults()
		if g.ID != w.ID || g.Moment != w.Moment || g.Cut != w.Cut || g.Disposition != w.Disposition || g.ExitCode != w.ExitCode {
			t.Errorf("case %d: file says %+v, want %+v", i, g, w)
		}
		if !g.Cut.NeedsKernel() {
			t.Errorf("%s: cut %v is not a kernel-only cut", g.ID, g.Cut)
		}
	}
}

// TestServerMatrix: every server fault is made at every moment it fits,
// each case loads valid, and no id is one of the default matrix's (a replay
// looks a case up in both).
func TestServerMatrix(t *testing.T) {
	made := map[fault.Cut]map[fault.Moment]bool{}
	defaults := map[string]bool{}
	for _, c := range DefaultMatrix() {
		defaults[c.ID] = true
	}
	for _, c := range ServerMatrix() {
		c = c.WithDefaults()
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
		if defaults[c.ID] {
			t.Errorf("%s is also a case of the default matrix", c.ID)
		}
		if made[c.Cut] == nil {
			made[c.Cut] = map[fault.Moment]bool{}
		}
		made[c.Cut][c.Moment] = true
	}
	for _, cut := range fault.ServerCuts() {
		for _, m := range fault.Moments() {
			if m.HasCut() && !m.IsStep() && cut.FitsMoment(m) && !made[cut][m] {
				t.Errorf("%s is never made at %s", cut, m)
			}
		}
	}
	if !made[0][fault.None] {
		t.Error("no case of a command killed by a signal with the transport up (exit-signal, never exit-status)")
	}
}
