package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/result"
	"golang.org/x/sync/errgroup"
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
// A command whose example script runs a program the machine lacks (a real
// client) skips, naming the Debian package (docPeers).
func TestDocsCommands(t *testing.T) {
	sshrigOnPath(t)
	files, _ := filepath.Glob("../../docs/*.md")
	total := 0
	// Four commands at a time: most are whole runs that spend their time
	// waiting on a tool's timeouts, and a run's verdicts hold on a busy
	// machine. t.Parallel would allow go test's -parallel, the core count;
	// t.Run may be called from goroutines.
	var g errgroup.Group
	g.SetLimit(4)
	defer g.Wait()
	for _, file := range files {
		for _, c := range docCommands(t, file) {
			total++
			name := filepath.Base(c.file) + ":" + strconv.Itoa(c.line)
			g.Go(func() error {
				t.Run(name, func(t *testing.T) { runDocCommand(t, c) })
				return nil
			})
		}
	}
	g.Wait()
	if total == 0 {
		t.Fatal("no commands found in docs/*.md")
	}
}

// runDocCommand runs c from the repository root and checks its exit status.
func runDocCommand(t *testing.T, c docCommand) {
	testpeer.Need(t, docPeers(t, c.cmd)...)
	if strings.Contains(c.cmd, "--net kernel") {
		requireKernel(t)
	}
	line := c.cmd
	// Runs go to a directory of the test's, quietly.
	if strings.HasPrefix(line, "sshrig run ") || line == "sshrig run" || strings.HasPrefix(line, "sshrig reconcile ") || strings.HasPrefix(line, "sshrig agent ") {
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
}

var exampleScriptRE = regexp.MustCompile(`docs/examples/[A-Za-z0-9_.-]+\.sh`)

// execToolRE finds a doc command's `--tool 'exec:…'`.
var execToolRE = regexp.MustCompile(`--tool \x27exec:[^\x27]*\x27`)

// docPeers lists the programs a doc command needs besides sshrig: those of
// testpeer's table that its exec: tool runs or the example scripts it names
// run. A script that merely mentions one in a comment makes its command need
// it too, which costs a skip on a machine without it and nothing in CI.
func docPeers(t *testing.T, cmd string) []string {
	var needs []string
	// A program the command runs itself as an exec: tool (exec:ssh …,
	// exec:env … ansible …).
	if spec := execToolRE.FindString(cmd); spec != "" {
		for _, p := range testpeer.Programs() {
			word := regexp.MustCompile(`(^|[\s:'"])` + regexp.QuoteMeta(p) + `($|[\s'"])`)
			if word.MatchString(spec) && !slices.Contains(needs, p) {
				needs = append(needs, p)
			}
		}
	}
	for _, script := range exampleScriptRE.FindAllString(cmd, -1) {
		b, err := os.ReadFile(filepath.Join("../..", script))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range testpeer.Programs() {
			word := regexp.MustCompile(`(^|[\s;|&("'\x60])` + regexp.QuoteMeta(p) + `($|[\s;|&)"'\x60])`)
			if word.Match(b) && !slices.Contains(needs, p) {
				needs = append(needs, p)
			}
		}
	}
	return needs
}

// TestExampleScriptsShellcheck: the shell scripts in docs/examples are what
// users copy; shellcheck finds nothing in them.
func TestExampleScriptsShellcheck(t *testing.T) {
	sc := testpeer.Need(t, "shellcheck")[0]
	scripts, _ := filepath.Glob("../../docs/examples/*.sh")
	if len(scripts) == 0 {
		t.Fatal("no scripts in docs/examples")
	}
	if out, err := exec.Command(sc, scripts...).CombinedOutput(); err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
}

// TestDocPeers: the real-client commands of docs/real-clients.md need their
// client, and an OpenSSH wrapper needs ssh only.
func TestDocPeers(t *testing.T) {
	for cmd, want := range map[string][]string{
		"sshrig run --tool 'exec:docs/examples/plink-honest.sh'":    {"plink", "puttygen", "ssh-keygen"},
		"sshrig run --tool 'exec:docs/examples/dbclient-honest.sh'": {"dbclient", "dropbearconvert"},
		"sshrig run --tool 'exec:docs/examples/ssh-honest.sh'":      {"ssh"},
		"sshrig run --tool 'exec:sshrig exec'":                      nil,
	} {
		got := docPeers(t, cmd)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: needs %q, want %q", cmd, got, want)
		}
	}
}

// TestToolContractOpens: docs/tool-contract.md opens with a complete result
// line, one the rig's own parser accepts, and the ten-line honest tool as it
// is in docs/examples (whose command TestDocsCommands runs).
func TestToolContractOpens(t *testing.T) {
	b, err := os.ReadFile("../../docs/tool-contract.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	head := doc[:strings.Index(doc, "\n## ")]
	line := regexp.MustCompile("(?s)```json\n(.*?)\n```").FindStringSubmatch(head)
	if line == nil {
		t.Fatal("docs/tool-contract.md does not open with a ```json result line")
	}
	if strings.Contains(line[1], "\n") {
		t.Errorf("the result is not one line: %s", line[1])
	}
	if _, err := result.Parse([]byte(line[1])); err != nil {
		t.Errorf("the opening result line does not parse: %v", err)
	}
	script, err := os.ReadFile("../../docs/examples/ten-line-honest.sh")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(script), "\n"); n > 10 {
		t.Errorf("ten-line-honest.sh has %d lines", n)
	}
	if !strings.Contains(head, "```sh\n"+string(script)+"```\n") {
		t.Error("docs/tool-contract.md's opening does not show docs/examples/ten-line-honest.sh as it is")
	}
	if !strings.Contains(head, "$ sshrig run --tool 'exec:docs/examples/ten-line-honest.sh'") {
		t.Error("docs/tool-contract.md's opening does not run the ten-line tool")
	}
}
