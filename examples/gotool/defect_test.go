package gotool_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/examples/gotool"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/sshrigtest"
)

// runDefective makes TestIgnoresExitCode run the defective tool in a child
// test process, whose subtests are meant to fail.
const runDefective = "GOTOOL_RUN_DEFECTIVE"

// The defective tool fails exactly the cases where the command exits
// non-zero and its exit status reaches the tool, each on the category
// assertion; every other case passes. The matrix runs in a child test
// process, so that its failing subtests are what this test checks.
func TestIgnoresExitCode(t *testing.T) {
	defective := sshrigtest.Func("ignores-exit-code", gotool.IgnoresExitCode)
	if os.Getenv(runDefective) != "" {
		sshrigtest.New(t).Run(t, defective)
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestIgnoresExitCode$", "-test.v")
	cmd.Env = append(os.Environ(), runDefective+"=1")
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("child test: %v, want it to fail\n%s", err, out)
	}

	var want []string
	for _, c := range matrix.DefaultMatrix() {
		if ok, _ := matrix.Applies(c, defective); ok && c.ExitCode != 0 {
			want = append(want, c.ID)
		}
	}
	failed := failures(out)
	var got []string
	for id, msg := range failed {
		got = append(got, id)
		if !strings.Contains(msg, "violation: "+report.AssertCategory+"/") {
			t.Errorf("%s failed without naming the category assertion:\n%s", id, msg)
		}
		if !strings.Contains(msg, "reported: succeeded/") || !strings.Contains(msg, "honest:   confirmed_failure/") {
			t.Errorf("%s: the message does not say what was reported and what was honest:\n%s", id, msg)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("failed subtests %v, want exactly %v\n%s", got, want, out)
	}
}

// failures maps each failed subtest of TestIgnoresExitCode in a verbose
// test log to what it logged (the lines under its "=== RUN" line).
func failures(log []byte) map[string]string {
	const run, fail = "=== RUN   TestIgnoresExitCode/", "--- FAIL: TestIgnoresExitCode/"
	logged := map[string]string{}
	failed := map[string]string{}
	var current string
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, run):
			current = strings.TrimPrefix(line, run)
		case strings.HasPrefix(trimmed, fail):
			id, _, _ := strings.Cut(strings.TrimPrefix(trimmed, fail), " ")
			failed[id] = logged[id]
			current = ""
		case strings.HasPrefix(line, "===") || strings.HasPrefix(trimmed, "---"):
			current = ""
		case current != "":
			logged[current] += line + "\n"
		}
	}
	return failed
}
