package sshrigtest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every Go example in docs/go-harness.md is the text of a test that runs:
// in examples/gotool (a module of its own, as a user's is; .ci/run tests it)
// or in this package. An example changed on one side only fails here.
func TestGoHarnessDocExamplesAreTests(t *testing.T) {
	doc, err := os.ReadFile("../docs/go-harness.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/go-harness.md has %d Go examples, want one per style", len(blocks))
	}
	var sources []string
	for _, glob := range []string{"../examples/gotool/*_test.go", "*_test.go"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sources = append(sources, string(b))
		}
	}
	for _, b := range blocks {
		found := false
		for _, src := range sources {
			found = found || strings.Contains(src, b[1])
		}
		if !found {
			t.Errorf("this example of docs/go-harness.md is in no test of examples/gotool or sshrigtest:\n%s", b[1])
		}
	}
}
