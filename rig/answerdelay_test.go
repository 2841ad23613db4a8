package rig

import (
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/tools"
)

func TestParseAnswerDelay(t *testing.T) {
	for in, want := range map[string]AnswerDelay{"20ms": {20 * time.Millisecond, 20 * time.Millisecond}, "0-40ms": {0, 40 * time.Millisecond},
		"5ms-1s": {5 * time.Millisecond, time.Second}} {
		got, err := ParseAnswerDelay(in)
		if err != nil || got != want {
			t.Errorf("ParseAnswerDelay(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "40ms-20ms", "-5ms", "1m", "20"} {
		if d, err := ParseAnswerDelay(in); err == nil {
			t.Errorf("ParseAnswerDelay(%q) = %v, want an error", in, d)
		}
	}
}

// The delay is drawn per case run from its seed, recorded, the same for
// the same seed, and the server really waits it: the tool's exec request is
// answered no sooner.
func TestAnswerDelayDrawn(t *testing.T) {
	d := AnswerDelay{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}
	rp := Repeat{Times: 3, Seed: 42, AnswerDelay: &d}
	globs := []string{"none.exit0", "exit-status.reset.exit0"}
	first := map[string]float64{}
	for i, rep := range []*Report{repeatRun(t, tools.Reference{}, globs, rp), repeatRun(t, tools.Reference{}, globs, rp)} {
		distinct := map[float64]bool{}
		for _, c := range rep.Cases {
			got := answerDelay(c.Draw.AnswerDelayMS)
			if got < d.Min || got > d.Max {
				t.Errorf("%s drew %s, outside %s", c.RunName(), got, d)
			}
			if c.Verdict != Pass {
				t.Errorf("%s: %s %v %s", c.RunName(), c.Verdict, c.Violations, c.Reason)
			}
			if time.Duration(c.ToolMS)*time.Millisecond < got-time.Millisecond {
				t.Errorf("%s: the tool took %d ms, less than the %s the server waits before answering", c.RunName(), c.ToolMS, got)
			}
			if i == 0 {
				first[c.RunName()] = c.Draw.AnswerDelayMS
			} else if first[c.RunName()] != c.Draw.AnswerDelayMS {
				t.Errorf("%s drew %v ms, then %v ms with the same seed", c.RunName(), first[c.RunName()], c.Draw.AnswerDelayMS)
			}
			distinct[c.Draw.AnswerDelayMS] = true
		}
		if len(distinct) < 2 {
			t.Errorf("six case runs all drew %v: nothing was drawn", distinct)
		}
	}
}
