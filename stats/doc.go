// Package stats owns the arithmetic of repeated runs: the Wilson score
// interval of a failure rate (report.Rates carries one per case). It is
// public because reports carry its Interval; it knows nothing of cases or
// verdicts beyond counts.
package stats
