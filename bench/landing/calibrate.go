package main

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// Calibration is what the time-based injectors learned on earlier runs:
// where each window lies after the tool's start, how long Toxiproxy takes to
// answer a toxic's request, and the delay each injector uses per moment.
type Calibration struct {
	// Runs are the first runs: the tool through Toxiproxy, a toxic of
	// toxicity 0 (Toxiproxy installs it and it passes everything) added to
	// time the API.
	Runs int `json:"runs"`
	// SweepRuns is how many runs each candidate delay got (see
	// candidates); 0: no sweep, the delays aim at the windows' middles.
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
	// Landmarks are the median times, from the tool's start, of the steps
	// of the exchange every calibration run had.
	Landmarks map[string]time.Duration `json:"landmarks_ns"`
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

// landmark is a step of the exchange that every run has: a moment, the
// exec request's arrival, the command's start gate and exit, the channel's
// close.
type landmark struct {
	kind   control.EventKind
	moment fault.Moment
}

func (l landmark) String() string {
	if l.kind == control.MomentReached {
		return l.moment.String()
	}
	return string(l.kind)
}

// landmarkOf names e if it is a landmark (the first of its kind counts).
func landmarkOf(e control.Event) (landmark, bool) {
	switch e.Kind {
	case control.MomentReached:
		return landmark{e.Kind, e.Moment}, true
	case control.ProcSpawned, control.ProcStartGate, control.ProcWorkDone, control.ProcExited, control.ExitSent, control.ExecFinished:
		return landmark{kind: e.Kind}, true
	case control.RequestSeen:
		if e.Request == "exec" {
			return landmark{kind: e.Kind}, true
		}
	}
	return landmark{}, false
}

// sweepBefore is how many landmarks before a window's start the sweep
// reaches back: a reset acts on the next data after its installation, so a
// delay that installs it before the window can land inside.
const sweepBefore = 4

// calibrate learns the delays. Its runs use the measured runs' workload,
// path and server; none of them is counted.
func calibrate(ctx context.Context, b *bench, runs, sweep int, ms []fault.Moment, prog *progress) (*Calibration, error) {
	c := &Calibration{Runs: runs, SweepRuns: sweep, APIRTT: map[Injector]time.Duration{},
		Windows: map[fault.Moment]WindowAim{}, Delays: map[fault.Moment]map[Injector]time.Duration{}}
	rtts := map[Injector][]time.Duration{}
	starts := map[fault.Moment][]time.Duration{}
	mids := map[fault.Moment][]time.Duration{}
	widths := map[fault.Moment][]time.Duration{}
	lmTimes := map[landmark][]time.Duration{}
	b.phase = "calibration"
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
		seen := map[landmark]bool{}
		for _, e := range res.events {
			if l, ok := landmarkOf(e); ok && !seen[l] {
				seen[l] = true
				lmTimes[l] = append(lmTimes[l], e.Time.Sub(res.t0))
			}
		}
		for _, m := range moments {
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
	var landmarks []timedLandmark
	for l, ts := range lmTimes {
		if len(ts) == runs { // every run had it
			landmarks = append(landmarks, timedLandmark{l, quantile(ts, 0.5)})
		}
	}
	slices.SortFunc(landmarks, func(a, b timedLandmark) int { return cmp.Compare(a.at, b.at) })
	c.Landmarks = map[string]time.Duration{}
	for _, l := range landmarks {
		c.Landmarks[l.String()] = l.at
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
	plans := map[fault.Moment]map[Injector][]time.Duration{}
	total := 0
	for _, m := range ms {
		plans[m] = map[Injector][]time.Duration{}
		for _, inj := range injectors[1:] {
			plans[m][inj] = candidates(landmarks, m, c.Windows[m], c.APIRTT[inj])
			total += len(plans[m][inj]) * sweep
		}
	}
	done := 0
	b.phase = "sweep"
	for _, m := range ms {
		// The two toxics' candidates take turns, run by run, as the
		// measured runs do.
		cands := map[Injector][]Candidate{}
		for _, inj := range injectors[1:] {
			for _, d := range plans[m][inj] {
				cands[inj] = append(cands[inj], Candidate{Delay: d})
			}
		}
		for i := range max(len(cands[ResetPeer]), len(cands[Timeout])) {
			for range sweep {
				for _, inj := range injectors[1:] {
					if i >= len(cands[inj]) {
						continue
					}
					cand := &cands[inj][i]
					res, err := b.run(ctx, plan{moment: m, injector: inj, toxic: string(inj), toxicity: 1, delay: cand.Delay})
					if err != nil {
						return nil, err
					}
					if res.Verdict == Hit {
						cand.Hits++
					}
					done++
					prog.step("sweeping delays", done, total)
				}
			}
		}
		c.SweepHits[m] = cands
		for _, inj := range injectors[1:] {
			c.Delays[m][inj] = best(cands[inj], c.Delays[m][inj])
		}
	}
	return c, nil
}

// timedLandmark is a landmark at its median offset from the tool's start.
type timedLandmark struct {
	landmark
	at time.Duration
}

// candidates are the delays the sweep tries for moment m: the median times
// of the landmarks from sweepBefore before the window's start to its end,
// the midpoints between them and the window's middle, each less Toxiproxy's
// answer time, so the toxic is installed then.
func candidates(lms []timedLandmark, m fault.Moment, w WindowAim, rtt time.Duration) []time.Duration {
	first := len(lms)
	for i, l := range lms {
		if l.kind == control.MomentReached && l.moment == m {
			first = i
			break
		}
	}
	if first == len(lms) {
		return []time.Duration{max(w.Mid-rtt, 0)}
	}
	var at []time.Duration
	end := w.Start + w.Width
	for i := max(first-sweepBefore, 0); i < len(lms) && lms[i].at <= end; i++ {
		at = append(at, lms[i].at)
		if i+1 < len(lms) && lms[i+1].at <= end {
			at = append(at, lms[i].at+(lms[i+1].at-lms[i].at)/2)
		}
	}
	at = append(at, w.Mid)
	var out []time.Duration
	for _, t := range at {
		d := max(t-rtt, 0)
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// best is the candidate with the most hits; among equals, the one nearest
// the window's middle (base).
func best(cands []Candidate, base time.Duration) time.Duration {
	dist := func(d time.Duration) time.Duration { return max(d-base, base-d) }
	bestD, bestHits := base, -1
	for _, c := range cands {
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
