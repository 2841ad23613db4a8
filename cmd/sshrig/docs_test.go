package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sshrigOnPath puts an "sshrig" that is this test binary on PATH.
func sshrigOnPath(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\n" + testMainEnv + "=1 exec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "sshrig"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

type docCommand struct {
	file string
	line int
	cmd  string
	exit int
}

var exitsRE = regexp.MustCompile(`\s+#\s*exits\s+(\d+)\s*$`)

// docCommands extracts "$ sshrig ..." lines from ```console blocks.
func docCommands(t *testing.T, file string) []docCommand {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```console"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.HasPrefix(line, "$ "):
			c := docCommand{file: file, line: n, cmd: strings.TrimPrefix(line, "$ ")}
			if m := exitsRE.FindStringSubmatch(c.cmd); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
				c.cmd = strings.TrimSpace(exitsRE.ReplaceAllString(c.cmd, ""))
			}
			out = append(out, c)
		}
	}
	return out
}

// TestDocsCommands runs every command shown in docs/*.md, from the
// repository root, and checks its exit status: a contract the docs describe
// and the rig does not accept is the failure this project exists to prevent.
func TestDocsCommands(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("OpenSSH's client is not installed (apt-get install openssh-client)")
	}
	sshrigOnPath(t)
	files, _ := filepath.Glob("../../docs/*.md")
	total := 0
	for _, file := range files {
		for _, c := range docCommands(t, file) {
			total++
			name := filepath.Base(c.file) + ":" + strconv.Itoa(c.line)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				line := c.cmd
				// Runs go to a directory of the test's, quietly.
				if strings.HasPrefix(line, "sshrig run ") || line == "sshrig run" || strings.HasPrefix(line, "sshrig reconcile ") {
					line += " --out \"$RUNDIR\" -q"
				}
				cmd := exec.Command("sh", "-c", line)
				cmd.Dir = "../.."
				cmd.Env = append(os.Environ(), "RUNDIR="+t.TempDir())
				out, err := cmd.CombinedOutput()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != c.exit {
					t.Fatalf("%s\nexited %d, the doc says %d:\n%s", c.cmd, code, c.exit, out)
				}
			})
		}
	}
	if total == 0 {
		t.Fatal("no commands found in docs/*.md")
	}
}

// TestExampleScriptsShellcheck: the shell scripts in docs/examples are what
// users copy; shellcheck finds nothing in them.
func TestExampleScriptsShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck is not installed (apt-get install shellcheck; .ci/run installs it)")
	}
	scripts, _ := filepath.Glob("../../docs/examples/*.sh")
	if len(scripts) == 0 {
		t.Fatal("no scripts in docs/examples")
	}
	if out, err := exec.Command(sc, scripts...).CombinedOutput(); err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
}
