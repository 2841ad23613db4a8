package main

import (
	"strings"

	"github.com/sshrig/sshrig/matrix"
)

// stepGlobsCanMatch is a usage error naming the first glob the matrix did
// not match that no step case can match either.
func stepGlobsCanMatch(required []string) error {
	for _, g := range required {
		if !matrix.CanMatchStepCase(g) {
			return usageError("--cases %q matches no case of the matrix ('sshrig cases' lists them), and no step case can match it either (their ids are %sNN-REQUEST.CUT, the cut %s; the preflight makes them)",
				g, matrix.StepCasePrefix, strings.Join(cutNames(), " or "))
		}
	}
	return nil
}

func cutNames() []string {
	var out []string
	for _, c := range matrix.StepIDCuts() {
		out = append(out, c.String())
	}
	return out
}
