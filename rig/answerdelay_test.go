package rig

import (
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// The delay is drawn per case run from its seed, recorded, the same for
// the same seed, and the server really waits it: the tool's exec request is
// answered no sooner.
func TestAnswerDelayDrawn(t *testing.T) {
	d := matrix.AnswerDelay{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}
	rp := Repeat{Times: 3, Seed: 42, AnswerDelay: &d}
	globs := []string{"none.exit0", "exit-status.reset.exit0"}
	first := map[string]float64{}
	for i, rep := range []*report.Report{repeatRun(t, tools.Reference{}, globs, rp), repeatRun(t, tools.Reference{}, globs, rp)} {
		distinct := map[float64]bool{}
		for _, c := range rep.Cases {
			got := answerDelay(c.Draw.AnswerDelayMS)
			if got < d.Min || got > d.Max {
				t.Errorf("%s drew %s, outside %s", c.RunName(), got, d)
			}
			if c.Verdict != report.Pass {
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
