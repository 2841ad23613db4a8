package main

import (
	"fmt"
	"io"
	"os"

	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// defaultMatrixPath is where the default matrix lives in this repository,
// for annotations that point at a case's definition.
const defaultMatrixPath = "matrix/default.yaml"

// ciOutput writes what a CI system reads besides the table. Under GitHub
// Actions (GITHUB_ACTIONS=true): one ::error annotation per failing case on
// stdout, and the run's Markdown summary appended to $GITHUB_STEP_SUMMARY.
func ciOutput(stdout, stderr io.Writer, rep *report.Report, matrixPath string, cases []matrix.Case) {
	if os.Getenv("GITHUB_ACTIONS") != "true" {
		return
	}
	file := matrixPath
	if file == "" {
		file = defaultMatrixPath
	}
	lines := map[string]int{}
	for _, c := range cases {
		lines[c.ID] = c.Line
	}
	rep.WriteGitHubAnnotations(stdout, func(id string) (string, int) {
		if l, ok := lines[id]; ok {
			return file, l
		}
		return "", 0
	})
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		rep.WriteStepSummary(f)
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "sshrig: GITHUB_STEP_SUMMARY: %v\n", err)
	}
}
