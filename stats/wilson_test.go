package stats

import (
	"math"
	"testing"
)

// Reference values from Wilson (1927) as tabulated by Newcombe (1998),
// "Two-sided confidence intervals for the single proportion", table I
// (method 3, without continuity correction).
func TestWilsonKnownValues(t *testing.T) {
	for _, tc := range []struct {
		k, n      int
		low, high float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
		{29, 29, 0.8830, 1},
	} {
		iv := Wilson(tc.k, tc.n, Z95)
		if math.Abs(iv.Low-tc.low) > 5e-4 || math.Abs(iv.High-tc.high) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", tc.k, tc.n, iv.Low, iv.High, tc.low, tc.high)
		}
		if !iv.Contains(iv.Rate) {
			t.Errorf("Wilson(%d, %d) = %v does not contain its own rate", tc.k, tc.n, iv)
		}
	}
}

func TestWilsonNoTrials(t *testing.T) {
	if iv := Wilson(0, 0, Z95); iv.Low != 0 || iv.High != 1 {
		t.Fatalf("Wilson(0, 0) = %v, want [0, 1]", iv)
	}
}

func TestWilsonString(t *testing.T) {
	if got, want := Wilson(5, 50, Z95).String(), "10.0% [4.3%, 21.4%]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// FuzzWilson: for any counts the interval is ordered, inside [0, 1] and
// contains the observed rate.
func FuzzWilson(f *testing.F) {
	f.Add(0, 1)
	f.Add(5, 50)
	f.Add(10000, 10000)
	f.Fuzz(func(t *testing.T, k, n int) {
		if n <= 0 || n > 1<<30 || k < 0 || k > n {
			return
		}
		iv := Wilson(k, n, Z95)
		if !(0 <= iv.Low && iv.Low <= iv.Rate && iv.Rate <= iv.High && iv.High <= 1) {
			t.Fatalf("Wilson(%d, %d) = %+v", k, n, iv)
		}
	})
}
