package main

import (
	"context"
	"slices"
	"time"

	"github.com/sshrig/sshrig/fault"
)

// Calibration is what the time-based injectors learned on earlier runs:
// where each window lies after the tool's start, how long Toxiproxy takes to
// answer a toxic's request, and the delay each injector uses per moment.
type Calibration struct {
	// Runs are the first runs: the tool through Toxiproxy, a toxic of
	// toxicity 0 (Toxiproxy installs it and it passes everything) added to
	// time the API.
	Runs int `json:"runs"`
	// SweepRuns is how many runs each candidate delay got; 0: no sweep,
	// the delays aim at the windows' middles.
	SweepRuns int `json:"sweep_runs"`
	// APIRTT is the median time from a toxic's request to Toxiproxy's
	// answer, per toxic.
	APIRTT map[Injector]time.Duration `json:"api_rtt_ns"`
	// Windows are the median window per moment, as offsets from the tool's
	// start.
	Windows map[fault.Moment]WindowAim `json:"windows"`
	// Delays are the delays used, per moment and injector: from the tool's
	// start to the toxic's request.
	Delays map[fault.Moment]map[Injector]time.Duration `json:"delays_ns"`
	// SweepHits are the sweep's hits per candidate delay, per moment and
	// injector.
	SweepHits map[fault.Moment]map[Injector][]Candidate `json:"sweep,omitempty"`
}

// WindowAim is where a moment's window lay in the calibration runs.
type WindowAim struct {
	Start time.Duration `json:"start_ns"` // median offset of its start
	Width time.Duration `json:"width_ns"` // median width
	Mid   time.Duration `json:"mid_ns"`   // median offset of its middle
}

// Candidate is one delay the sweep tried.
type Candidate struct {
	Delay time.Duration `json:"delay_ns"`
	Hits  int           `json:"hits"`
}

// sweepSteps are the candidate delays around a window's middle, in steps of
// half its median width (at least minStep): the reset acts on the next data
// after its installation, so delays before the window are tried too.
var sweepSteps = []int{-6, -5, -4, -3, -2, -1, 0, 1, 2}

const minStep = 50 * time.Microsecond

// calibrate learns the delays. Every run here is made the way the measured
// runs are; none of them is counted.
func calibrate(ctx context.Context, b *bench, runs, sweep int, ms []fault.Moment, prog *progress) (*Calibration, error) {
	c := &Calibration{Runs: runs, SweepRuns: sweep, APIRTT: map[Injector]time.Duration{},
		Windows: map[fault.Moment]WindowAim{}, Delays: map[fault.Moment]map[Injector]time.Duration{}}
	rtts := map[Injector][]time.Duration{}
	starts := map[fault.Moment][]time.Duration{}
	mids := map[fault.Moment][]time.Duration{}
	widths := map[fault.Moment][]time.Duration{}
	for i := range runs {
		inj := injectors[1+i%2]
		// The toxic's request comes when the exec moment came so far, so
		// the API is timed with the workload in flight.
		p := plan{moment: fault.Exec, injector: inj, toxic: string(inj), toxicity: 0, delay: quantile(starts[fault.Exec], 0.5)}
		res, err := b.run(ctx, p)
		if err != nil {
			return nil, err
		}
		rtts[inj] = append(rtts[inj], res.APIRTT)
		for _, m := range fault.Moments() {
			w, ok := windowOf(res.events, m)
			if !ok || w.End.IsZero() {
				continue
			}
			start, end := w.Start.Sub(res.t0), w.End.Sub(res.t0)
			starts[m] = append(starts[m], start)
			mids[m] = append(mids[m], start+(end-start)/2)
			widths[m] = append(widths[m], end-start)
		}
		prog.step("calibrating", i+1, runs)
	}
	for _, inj := range injectors[1:] {
		c.APIRTT[inj] = quantile(rtts[inj], 0.5)
	}
	for _, m := range ms {
		aim := WindowAim{Start: quantile(starts[m], 0.5), Width: quantile(widths[m], 0.5), Mid: quantile(mids[m], 0.5)}
		c.Windows[m] = aim
		c.Delays[m] = map[Injector]time.Duration{}
		for _, inj := range injectors[1:] {
			c.Delays[m][inj] = max(aim.Mid-c.APIRTT[inj], 0)
		}
	}
	if sweep == 0 {
		return c, nil
	}
	c.SweepHits = map[fault.Moment]map[Injector][]Candidate{}
	total := len(ms) * 2 * len(sweepSteps) * sweep
	done := 0
	for _, m := range ms {
		c.SweepHits[m] = map[Injector][]Candidate{}
		step := max(c.Windows[m].Width/2, minStep)
		for _, inj := range injectors[1:] {
			base := c.Delays[m][inj]
			var cands []Candidate
			for _, k := range sweepSteps {
				d := base + time.Duration(k)*step
				if d < 0 || slices.ContainsFunc(cands, func(x Candidate) bool { return x.Delay == d }) {
					done += sweep
					continue
				}
				cand := Candidate{Delay: d}
				for range sweep {
					res, err := b.run(ctx, plan{moment: m, injector: inj, toxic: string(inj), toxicity: 1, delay: d})
					if err != nil {
						return nil, err
					}
					if res.Verdict == Hit {
						cand.Hits++
					}
					done++
					prog.step("sweeping delays", done, total)
				}
				cands = append(cands, cand)
			}
			c.SweepHits[m][inj] = cands
			c.Delays[m][inj] = best(cands, base)
		}
	}
	return c, nil
}

// best is the candidate with the most hits; among equals, the one nearest
// the window's middle (base).
func best(cands []Candidate, base time.Duration) time.Duration {
	bestD, bestHits := base, -1
	for _, c := range cands {
		dist := func(d time.Duration) time.Duration { return max(d-base, base-d) }
		if c.Hits > bestHits || c.Hits == bestHits && dist(c.Delay) < dist(bestD) {
			bestD, bestHits = c.Delay, c.Hits
		}
	}
	return bestD
}

// quantile is the q-quantile of ds (nearest rank), 0 when empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[i]
}
