package rig

import (
	"strings"
	"testing"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

func mustLink(t *testing.T, s string) Repeat {
	t.Helper()
	l, err := matrix.ParseLink(s)
	if err != nil {
		t.Fatal(err)
	}
	return Repeat{Times: 1, Seed: 11, Link: &l}
}

// Acceptance 3: the reference tool passes on a slow link, and the case
// runs record the link they had, each with its own seed.
func TestLinkReferencePasses(t *testing.T) {
	rep := repeatRun(t, tools.Reference{}, []string{"none.*", "started.reset.*", "exit-status.reset.*", "output.close.*"},
		mustLink(t, "latency=50ms,jitter=20ms,bandwidth=64KiB/s"))
	seeds := map[uint64]bool{}
	for _, c := range rep.Cases {
		if c.Verdict != report.Pass {
			t.Errorf("%s: %s %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
		}
		l := c.Draw.Link
		if l == nil || l.Latency == nil || l.Latency.Delay.Milliseconds() != 50 || l.Bandwidth.BytesPerSecond != 64<<10 || l.Seed != c.Draw.Seed {
			t.Errorf("%s: recorded link %+v", c.ID, l)
		}
		seeds[c.Draw.Seed] = true
	}
	if len(seeds) != len(rep.Cases) {
		t.Errorf("%d case runs share %d seeds", len(rep.Cases), len(seeds))
	}
}

// Acceptance 3: a tool whose keepalive deadline is shorter than the link's
// round trip, and which reports its timeout as a local failure, passes on
// loopback and is caught by the category assertion on the slow link.
func TestLinkShortTimeoutCaught(t *testing.T) {
	m, err := tools.Lookup("mutant:short-timeout-is-local-failure")
	if err != nil {
		t.Fatal(err)
	}
	globs := []string{"none.*"}
	if rep := repeatRun(t, m, globs, Repeat{Times: 1, Seed: 11}); rep.Summary.Pass != 2 {
		t.Fatalf("without a slow link: %s", rep.RatesLine())
	}
	rep := repeatRun(t, m, globs, mustLink(t, "latency=50ms,jitter=20ms"))
	for _, c := range rep.Cases {
		caught := false
		for _, v := range c.Violations {
			caught = caught || v.Assertion == m.(tools.Mutant).Catches()
		}
		if c.Verdict != report.Fail || !caught {
			t.Errorf("%s: %s %v, want caught by %s", c.ID, c.Verdict, c.Violations, m.(tools.Mutant).Catches())
		}
	}
}

func TestParseLink(t *testing.T) {
	l, err := matrix.ParseLink("latency=50ms,jitter=20ms,bandwidth=64KiB/s,slice=64,slice-jitter=32,slice-delay=1ms")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.String(), "latency 50ms±20ms, 64KiB/s, slices 64±32B every 1ms"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for in, want := range map[string]string{
		"":                        "no link faults given",
		"latency":                 "not key=value",
		"latency=fast":            "latency=fast: want a Go duration",
		"jitter=5ms":              "jitter needs latency",
		"latency=5ms,jitter=10ms": "jitter 10ms is more than the latency 5ms",
		"bandwidth=0":             "bandwidth=0: want bytes per second",
		"slice=8,slice-jitter=8":  "the size must be at least 1 and above the variation",
		"slice-delay=1ms":         "need slice",
		"latency=1ms,latency=2ms": "latency given twice",
		"loss=5%":                 `unknown link fault "loss"`,
	} {
		_, err := matrix.ParseLink(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLink(%q) = %v, want %q", in, err, want)
		}
	}
}

// The matrix field link: reads the same grammar, and a bad one is an error
// naming its file, line and field.
func TestMatrixLinkField(t *testing.T) {
	cases, err := matrix.LoadMatrix("m.yaml", []byte("cases:\n  - id: slow\n    moment: none\n    link: latency=50ms,jitter=20ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l := cases[0].Link; l == nil || l.Latency.Jitter.Milliseconds() != 20 {
		t.Fatalf("link %+v", l)
	}
	_, err = matrix.LoadMatrix("m.yaml", []byte("cases:\n  - id: slow\n    moment: none\n    link: latency=5ms,jitter=9ms\n"))
	if err == nil || !strings.Contains(err.Error(), "m.yaml:4:11: cases[0].link: jitter 9ms is more than the latency 5ms") {
		t.Fatalf("got %v", err)
	}
}
