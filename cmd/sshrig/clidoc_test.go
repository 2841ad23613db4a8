package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCLIDoc: docs/cli.md lists exactly the exit codes root.go defines and
// every command the root has.
func TestCLIDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	codes := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d) \|`).FindAllStringSubmatch(doc, -1) {
		codes[m[1]] = true
	}
	for _, c := range []int{exitPass, exitFail, exitUsage, exitRigFailed} {
		if !codes[string(rune('0'+c))] {
			t.Errorf("docs/cli.md does not document exit code %d", c)
		}
		delete(codes, string(rune('0'+c)))
	}
	for c := range codes {
		t.Errorf("docs/cli.md documents exit code %s, which root.go does not define", c)
	}
	for _, cmd := range newRoot(nil, nil).Commands() {
		if !strings.Contains(doc, "| `sshrig "+cmd.Name()+"` |") {
			t.Errorf("docs/cli.md's command table lacks sshrig %s", cmd.Name())
		}
	}
}
