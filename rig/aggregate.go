package rig

import (
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// aggregate fills the repeated run's record and rates.
func aggregate(r *report.Report, o Options, s *schedule, rates []report.CaseRate) {
	if !o.Repeat.On() {
		return
	}
	rr := &report.RepeatReport{Seed: o.Repeat.Seed, Times: o.Repeat.Times, Parallel: s.parallel, ParallelDrawn: o.Repeat.DrawParallel > 0,
		MaxFailureRate: o.Repeat.MaxFailureRate}
	if o.Repeat.For > 0 {
		rr.For = o.Repeat.For.String()
	}
	r.Repeat = rr
	r.Rates = inMatrixOrder(rates, o.Cases)
}

// inMatrixOrder sorts rates into the order of the cases.
func inMatrixOrder(rates []report.CaseRate, cases []matrix.Case) []report.CaseRate {
	by := map[string]report.CaseRate{}
	for _, r := range rates {
		by[r.ID] = r
	}
	out := make([]report.CaseRate, 0, len(rates))
	for _, c := range cases {
		if r, ok := by[c.ID]; ok {
			out = append(out, r)
			delete(by, c.ID)
		}
	}
	return out
}
