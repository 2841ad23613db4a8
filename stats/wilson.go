package stats

import (
	"fmt"
	"math"
)

// Z95 is the standard normal quantile for a two-sided 95 % interval.
const Z95 = 1.959963984540054

// Interval is a proportion with its confidence interval, all in [0, 1].
type Interval struct {
	Rate float64 `json:"rate"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Wilson is the Wilson score interval for k successes in n trials at the
// normal quantile z (Z95 for 95 %). Unlike the normal approximation it stays
// inside [0, 1] and is not degenerate at k = 0 or k = n, which is where a
// nightly run spends most of its time: 0 failures in 50 runs still leaves a
// rate of up to 7 % plausible. n = 0 gives the uninformative [0, 1].
func Wilson(k, n int, z float64) Interval {
	if n <= 0 {
		return Interval{Rate: 0, Low: 0, High: 1}
	}
	if k < 0 || k > n {
		panic(fmt.Sprintf("stats: %d successes in %d trials", k, n))
	}
	p := float64(k) / float64(n)
	nf := float64(n)
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	iv := Interval{Rate: p, Low: math.Max(0, center-half), High: math.Min(1, center+half)}
	// At the edges the bound is exact in theory; keep rounding from
	// excluding the observed rate itself.
	if k == 0 {
		iv.Low = 0
	}
	if k == n {
		iv.High = 1
	}
	return iv
}

// Contains reports whether p lies in the interval.
func (iv Interval) Contains(p float64) bool { return iv.Low <= p && p <= iv.High }

// String renders the interval as percentages: "10.0% [4.3%, 21.4%]".
func (iv Interval) String() string {
	return fmt.Sprintf("%s [%s, %s]", Percent(iv.Rate), Percent(iv.Low), Percent(iv.High))
}

// Percent renders a proportion as a percentage with one decimal.
func Percent(p float64) string { return fmt.Sprintf("%.1f%%", 100*p) }
