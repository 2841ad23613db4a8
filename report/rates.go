package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sshrig/sshrig/stats"
)

// RepeatReport records how a repeated run drew: enough to run it again
// exactly (sshrig run --seed).
type RepeatReport struct {
	Seed     uint64 `json:"seed,string"`
	Times    int    `json:"times,omitempty"`
	For      string `json:"for,omitempty"`
	Parallel int    `json:"parallel"`
	// ParallelDrawn says the parallelism was drawn from the seed.
	ParallelDrawn bool `json:"parallel_drawn,omitempty"`
	// MaxFailureRate is the threshold the run failed above (Repeat).
	MaxFailureRate float64 `json:"max_failure_rate,omitempty"`
}

// MaxFirstFailures is how many failing case runs a case's rate lists;
// the table shows the first tableFailures of them.
const (
	MaxFirstFailures = 5
	tableFailures    = 2
)

// CaseRate aggregates a case's runs in a repeated run.
type CaseRate struct {
	ID           string `json:"id"`
	Runs         int    `json:"runs"`
	Pass         int    `json:"pass"`
	Fail         int    `json:"fail"`
	Inconclusive int    `json:"inconclusive"`
	Skipped      int    `json:"skipped"`
	// Failure is the failure rate over the judged runs (pass + fail), with
	// its 95 % Wilson interval: an inconclusive run checked nothing, so it
	// counts neither way.
	Failure stats.Interval `json:"failure"`
	// Flaky: the case both passed and failed.
	Flaky bool `json:"flaky"`
	// FirstFailures are the first failing case runs, in the order they ran.
	FirstFailures []FailingRun `json:"first_failures,omitempty"`
}

// FailingRun names one failing case run.
type FailingRun struct {
	Run           string `json:"run"` // as sshrig replay takes it: id#round
	CorrelationID string `json:"correlation_id"`
}

// Judged is the number of runs with a pass or fail verdict.
func (c CaseRate) Judged() int { return c.Pass + c.Fail }

// Status is the case's overall status: fail, flaky, pass, inconclusive or
// skipped.
func (c CaseRate) Status() string {
	switch {
	case c.Flaky:
		return "flaky"
	case c.Fail > 0:
		return "fail"
	case c.Inconclusive > 0:
		return "inconclusive"
	case c.Pass > 0:
		return "pass"
	}
	return "skipped"
}

// Rates aggregates case reports per case id, in the order each case first
// appears among them.
func Rates(cases []CaseReport) []CaseRate {
	var a Aggregator
	for _, c := range cases {
		a.Add(c)
	}
	return a.Rates()
}

// WriteRates prints one row per case of a repeated run: runs, verdict
// counts, the failure rate with its 95 % interval, and the first failing
// case runs.
func (r *Report) WriteRates(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRUNS\tPASS\tFAIL\tINCONCL\tFAILURE RATE [95% CI]\tSTATUS")
	for _, c := range r.Rates {
		status := c.Status()
		if len(c.FirstFailures) > 0 {
			var runs []string
			for _, f := range c.FirstFailures[:min(len(c.FirstFailures), tableFailures)] {
				runs = append(runs, f.Run+" "+f.CorrelationID)
			}
			status += ": first " + strings.Join(runs, ", ")
		}
		rate := "-" // nothing judged: no rate to give
		if c.Judged() > 0 {
			rate = c.Failure.String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", c.ID, c.Runs, c.Pass, c.Fail, c.Inconclusive, rate, status)
	}
	return tw.Flush()
}

// RatesLine is the one-line summary of a repeated run.
func (r *Report) RatesLine() string {
	s := r.Summary
	flaky, failing := 0, 0
	worst := CaseRate{}
	for _, c := range r.Rates {
		if c.Flaky {
			flaky++
		}
		if c.Fail > 0 {
			failing++
		}
		if c.Failure.Rate > worst.Failure.Rate {
			worst = c
		}
	}
	line := fmt.Sprintf("%d case runs of %d cases: %d pass, %d fail, %d inconclusive, %d skipped; %d cases failing (%d flaky) in %.1fs (tool %s, target %s, seed %d)",
		s.Cases, len(r.Rates), s.Pass, s.Fail, s.Inconclusive, s.Skipped, failing, flaky, float64(s.DurationMS)/1000, r.Tool, r.Target, r.Repeat.Seed)
	if worst.Fail > 0 {
		line += fmt.Sprintf("; worst %s %s", worst.ID, worst.Failure)
	}
	return line
}

// FailsAbove lists the cases whose failure rate is above threshold (a
// proportion in [0, 1)): with threshold 0, every case that failed at all.
func (r *Report) FailsAbove(threshold float64) []CaseRate {
	var out []CaseRate
	for _, c := range r.Rates {
		if c.Fail > 0 && c.Failure.Rate > threshold {
			out = append(out, c)
		}
	}
	return out
}

// Aggregator counts case reports as they come: the summary and the rates
// per case, in the order each case first came. It holds no case run, only
// counts and each case's first failing runs (at most MaxFirstFailures), so
// a run of 10,000 case runs holds what one of 100 does.
type Aggregator struct {
	idx   map[string]int
	rates []CaseRate
	sum   Summary
}

// Add counts one case run.
func (a *Aggregator) Add(c CaseReport) {
	if a.idx == nil {
		a.idx = map[string]int{}
	}
	i, ok := a.idx[c.ID]
	if !ok {
		i = len(a.rates)
		a.idx[c.ID] = i
		a.rates = append(a.rates, CaseRate{ID: c.ID})
	}
	r := &a.rates[i]
	r.Runs++
	a.sum.Cases++
	switch c.Verdict {
	case Pass:
		r.Pass++
		a.sum.Pass++
	case Fail:
		r.Fail++
		a.sum.Fail++
		if len(r.FirstFailures) < MaxFirstFailures {
			r.FirstFailures = append(r.FirstFailures, FailingRun{Run: c.RunName(), CorrelationID: c.CorrelationID})
		}
	case Inconclusive:
		r.Inconclusive++
		a.sum.Inconclusive++
	case Skipped:
		r.Skipped++
		a.sum.Skipped++
	}
}

// Summary is the counts so far (its DurationMS is left to the caller).
func (a *Aggregator) Summary() Summary { return a.sum }

// Rates is the rates with their intervals.
func (a *Aggregator) Rates() []CaseRate {
	out := make([]CaseRate, len(a.rates))
	for i, r := range a.rates {
		r.Failure = stats.Wilson(r.Fail, r.Judged(), stats.Z95)
		r.Flaky = r.Pass > 0 && r.Fail > 0
		out[i] = r
	}
	return out
}
