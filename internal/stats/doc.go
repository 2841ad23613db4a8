// Package stats owns the arithmetic of repeated runs: the Wilson score
// interval for a failure rate, and the per-case tally it is computed from.
// It knows nothing of cases or verdicts beyond counts.
package stats
