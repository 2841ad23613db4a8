package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/sshrig/sshrig/internal/testpeer"
)

// testMainEnv makes this test binary behave as sshrig itself, so tests can
// run sshrig as a separate program (e.g. as an external tool: exec:sshrig exec).
const testMainEnv = "SSHRIG_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(testMainEnv) == "1" {
		os.Exit(runMain())
	}
	// This package's parallel tests are whole runs of the CLI that mostly
	// wait on a tool's timeouts: four at a time, not one per core, unless
	// -parallel is given (the command line is parsed after this).
	if err := flag.Set("test.parallel", "4"); err != nil {
		panic(err)
	}
	testscript.Main(m, map[string]func(){
		"sshrig": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI scripts under testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		// [peer:PROGRAM] holds when PROGRAM is installed; a script skips
		// without it, naming the Debian package. With SSHRIG_REQUIRE_PEERS=1
		// a missing program fails the script instead.
		Condition: func(cond string) (bool, error) {
			program, ok := strings.CutPrefix(cond, "peer:")
			if !ok {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			if testpeer.Package(program) == "" {
				return false, fmt.Errorf("[peer:%s]: internal/testpeer does not know %s's Debian package", program, program)
			}
			if _, err := testpeer.Lookup(program); err != nil {
				if testpeer.Required() {
					return false, fmt.Errorf("%s=1, but %v", testpeer.RequireEnv, err)
				}
				return false, nil
			}
			return true, nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// droplast FILE deletes FILE's last line, as a log cut short.
			"droplast": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: droplast FILE")
				}
				b := []byte(ts.ReadFile(args[0]))
				i := bytes.LastIndexByte(bytes.TrimSuffix(b, []byte("\n")), '\n')
				if i < 0 {
					ts.Fatalf("droplast: %s has one line or none", args[0])
				}
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), b[:i+1], 0o644))
			},
			// editline FILE N OLD NEW replaces OLD by NEW in line N of FILE,
			// as a log altered by hand.
			"editline": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 4 {
					ts.Fatalf("usage: editline FILE N OLD NEW")
				}
				n, err := strconv.Atoi(args[1])
				lines := strings.SplitAfter(ts.ReadFile(args[0]), "\n")
				if err != nil || n < 1 || n > len(lines) || !strings.Contains(lines[n-1], args[2]) {
					ts.Fatalf("editline: line %s of %s has no %q", args[1], args[0], args[2])
				}
				lines[n-1] = strings.Replace(lines[n-1], args[2], args[3], 1)
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(lines, "")), 0o644))
			},
			// status N cmd args... runs cmd and requires exit code N.
			"status": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: status CODE command [args...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("status: bad code %q", args[0])
				}
				err = ts.Exec(args[1], args[2:]...)
				got := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					got = ee.ExitCode()
				} else if err != nil {
					ts.Fatalf("status: %v", err)
				}
				if (got == want) == neg {
					ts.Fatalf("%s exited %d, want %d", args[1], got, want)
				}
			},
		},
	})
}

// TestReadmeSetUp keeps the README's promise: exactly two set-up commands,
// one running sshrig on the embedded default (exercised by
// testdata/script/readme.txtar) and the test command .ci/run runs.
func TestReadmeSetUp(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## Set-up on a fresh machine")
	if start < 0 {
		t.Fatal("README has no set-up section")
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	cmds := regexp.MustCompile(`(?m)^    (\S.*)$`).FindAllStringSubmatch(section, -1)
	var got []string
	for _, c := range cmds {
		got = append(got, c[1])
	}
	const testCommand = "go test -race -timeout 30m ./..."
	want := []string{"go run ./cmd/sshrig run", testCommand}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("README set-up commands %q, want %q", got, want)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(testCommand) + `$`).Match(ci) {
		t.Fatal(".ci/run does not run the README's test command")
	}
	script, err := os.ReadFile("testdata/script/readme.txtar")
	if err != nil || !strings.Contains(string(script), "exec sshrig run\n") {
		t.Fatal("testdata/script/readme.txtar must run 'sshrig run' exactly as the README does")
	}
}
