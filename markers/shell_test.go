//go:build unix

package markers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/testpeer"
)

// testShell is a POSIX shell the wrapper must work with.
type testShell struct {
	name string   // subtest name
	argv []string // the shell and the arguments that come before -c
}

var testShells = []testShell{
	{name: "bin_sh", argv: []string{"/bin/sh"}},
	{name: "dash", argv: []string{"dash"}},
	{name: "bash", argv: []string{"bash"}},
	// busybox is a separate package (busybox or busybox-static on Debian);
	// its ash is the shell of most minimal images.
	{name: "busybox_sh", argv: []string{"busybox", "sh"}},
}

// forEachShell runs test once per shell in testShells that exists here,
// passing the full argv to run a script (the script is the last element).
func forEachShell(t *testing.T, test func(t *testing.T, argvFor func(script string) []string)) {
	for _, sh := range testShells {
		t.Run(sh.name, func(t *testing.T) {
			path := sh.argv[0]
			if !filepath.IsAbs(path) {
				path = testpeer.Need(t, path)[0]
			}
			test(t, func(script string) []string {
				return append(append([]string{path}, sh.argv[1:]...), "-c", script)
			})
		})
	}
}

// environWithoutGate is the test's environment with SSHRIG_GATE and
// SSHRIG_OPERATION_ID removed, so that the tests behave the same when the
// test binary itself runs under the rig (a stopped shell would hang them; an
// operation id would de-duplicate their runs).
func environWithoutGate() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, GateEnv+"=") && !strings.HasPrefix(kv, OperationIDEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}

type scriptRun struct {
	stdout, stderr string
	exitCode       int
	pid            int
	before, after  int64 // unix seconds around the run
	clock          bool  // the shell has EPOCHSECONDS: its markers carry the time
}

// coarseClockLag bounds how far the coarse clock a shell reads lags
// time.Now.
const coarseClockLag = 10 * time.Millisecond

func runScript(t *testing.T, argv []string, env []string) scriptRun {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A shell's EPOCHSECONDS reads the kernel's coarse clock (time(2)),
	// which lags the clock time.Now reads by up to a tick: a second
	// boundary crossed between the two makes the shell's second the
	// earlier one. A tick is at most 10 ms (HZ=100).
	before := time.Now().Add(-coarseClockLag).Unix()
	err := cmd.Run()
	after := time.Now().Unix()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running %q: %v", argv, err)
	}
	if !cmd.ProcessState.Exited() {
		t.Fatalf("shell did not exit normally: %v\nstderr: %s", cmd.ProcessState, stderr.String())
	}
	return scriptRun{
		stdout: stdout.String(), stderr: stderr.String(),
		exitCode: cmd.ProcessState.ExitCode(), pid: cmd.Process.Pid,
		before: before, after: after,
	}
}

func TestWrappedScriptInRealShells(t *testing.T) {
	tests := []struct {
		name        string
		command     string
		wantStdout  string
		wantCode    int
		allowStderr bool // the shell reports a killed job on stderr
	}{
		{name: "exit 0", command: "echo zero", wantStdout: "zero\n", wantCode: 0},
		{name: "exit 1", command: "echo one; false", wantStdout: "one\n", wantCode: 1},
		{name: "exit 7", command: "echo seven; (exit 7)", wantStdout: "seven\n", wantCode: 7},
		{name: "exit 255", command: "echo max; (exit 255)", wantStdout: "max\n", wantCode: 255},
		{name: "command calls exit", command: "echo leaving; exit 3; echo not reached", wantStdout: "leaving\n", wantCode: 3},
		{name: "set -e", command: "set -e; false; echo no", wantStdout: "", wantCode: 1},
		{name: "trailing comment", command: "echo commented # and the rest is a comment", wantStdout: "commented\n", wantCode: 0},
		{name: "comment on last line", command: "echo a\n# closing note", wantStdout: "a\n", wantCode: 0},
		{
			name:       "heredoc",
			command:    "cat <<'EOF'\nline one\n$HOME and $(stays) literal\n)\nEOF\ncat <<EOF2\nexpanded $((6 * 7))\nEOF2",
			wantStdout: "line one\n$HOME and $(stays) literal\n)\nexpanded 42\n",
			wantCode:   0,
		},
		{name: "single quotes", command: `printf '%s|%s\n' 'it'\''s' 'a "b" $c'; exit 5`, wantStdout: "it's|a \"b\" $c\n", wantCode: 5},
		{name: "trailing newline in command", command: "echo x\n\n", wantStdout: "x\n", wantCode: 0},
		{
			// The wrapper's variables are visible to the command but changing
			// them in the subshell does not affect the markers.
			name:       "command clobbers wrapper variables",
			command:    "sshrig_id=evil sshrig_ledger=/dev/null sshrig_rc=0; echo clobbered; exit 4",
			wantStdout: "clobbered\n", wantCode: 4,
		},
		{name: "work killed by SIGKILL", command: `sh -c 'kill -KILL $$'`, wantStdout: "", wantCode: 128 + 9, allowStderr: true},
	}
	forEachShell(t, func(t *testing.T, argvFor func(string) []string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				ledgerPath := filepath.Join(t.TempDir(), "it's a ledger.log")
				script, err := Wrap("case-1", ledgerPath, tt.command)
				if err != nil {
					t.Fatal(err)
				}
				run := runScript(t, argvFor(script), environWithoutGate())
				run.clock = hasClock(t, argvFor)
				if run.exitCode != tt.wantCode {
					t.Errorf("exit code %d, want %d (stderr: %q)", run.exitCode, tt.wantCode, run.stderr)
				}
				if run.stdout != tt.wantStdout {
					t.Errorf("stdout %q, want %q", run.stdout, tt.wantStdout)
				}
				if run.stderr != "" && !tt.allowStderr {
					t.Errorf("unexpected stderr %q", run.stderr)
				}
				checkOneRun(t, ledgerPath, "case-1", run, tt.wantCode)
			})
		}
	})
}

// checkOneRun checks that the ledger holds exactly one start and one
// complete marker for id, from the shell of run, with the given exit code.
func checkOneRun(t *testing.T, ledgerPath, id string, run scriptRun, wantCode int) {
	t.Helper()
	data, err := os.ReadFile(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	ledger := ParseBytes(data)
	if len(ledger.Malformed) != 0 {
		t.Fatalf("malformed ledger lines: %v", ledger.Malformed)
	}
	if len(ledger.Entries) != 2 {
		t.Fatalf("ledger has %d entries, want a start and a complete:\n%s", len(ledger.Entries), data)
	}
	start, complete := ledger.Entries[0], ledger.Entries[1]
	if start.Kind != Start || complete.Kind != Complete || start.ID != id || complete.ID != id {
		t.Fatalf("ledger is not one start and one complete for %s:\n%s", id, data)
	}
	if complete.ExitCode != wantCode {
		t.Errorf("complete marker has exit code %d, want %d", complete.ExitCode, wantCode)
	}
	for _, e := range ledger.Entries {
		if e.PID != run.pid {
			t.Errorf("%s marker has pid %d, want the shell's pid %d", e.Kind, e.PID, run.pid)
		}
		switch {
		case !run.clock && !e.Time.IsZero():
			t.Errorf("%s marker has time %s from a shell without EPOCHSECONDS, want %s", e.Kind, e.Time, NoClock)
		case run.clock && e.Time.IsZero():
			t.Errorf("%s marker has no time (%s) from a shell with EPOCHSECONDS", e.Kind, NoClock)
		case run.clock:
			if sec := e.Time.Unix(); sec < run.before || sec > run.after {
				t.Errorf("%s marker time %d is outside the run %d..%d", e.Kind, sec, run.before, run.after)
			}
		}
	}
}

// hasClock reports whether the shell run by argvFor has EPOCHSECONDS, asked
// of the shell itself, independently of the wrapper.
func hasClock(t *testing.T, argvFor func(string) []string) bool {
	t.Helper()
	argv := argvFor(`printf %s "${EPOCHSECONDS:-}"`)
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return len(out) > 0
}

func TestWrappedScriptWithoutLedgerDoesNoWork(t *testing.T) {
	tests := []struct {
		name   string
		ledger func(t *testing.T, dir string) string
	}{
		{name: "missing directory", ledger: func(t *testing.T, dir string) string {
			return filepath.Join(dir, "no such dir", "ledger")
		}},
		{name: "ledger is a directory", ledger: func(t *testing.T, dir string) string {
			return dir
		}},
		{name: "device that is always full", ledger: func(t *testing.T, dir string) string {
			// Opening succeeds and the write itself fails, which is a
			// different failure from the redirection failing.
			if _, err := os.Stat("/dev/full"); err != nil {
				t.Skip("no /dev/full on this system")
			}
			return "/dev/full"
		}},
		{name: "read-only directory", ledger: func(t *testing.T, dir string) string {
			if os.Geteuid() == 0 {
				t.Skip("running as root, which ignores directory permissions; the other cases cover a failing redirection")
			}
			readOnly := filepath.Join(dir, "read-only")
			if err := os.Mkdir(readOnly, 0o555); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(readOnly, "ledger")
		}},
	}
	forEachShell(t, func(t *testing.T, argvFor func(string) []string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				ledgerPath := tt.ledger(t, dir)
				workDone := filepath.Join(dir, "work done")
				script, err := Wrap("case-1", ledgerPath, "echo working; : >"+singleQuote(workDone))
				if err != nil {
					t.Fatal(err)
				}
				run := runScript(t, argvFor(script), environWithoutGate())
				if run.exitCode != ExitNoLedger {
					t.Errorf("exit code %d, want %d", run.exitCode, ExitNoLedger)
				}
				if want := "sshrig: cannot write start marker to " + ledgerPath + "\n"; !strings.HasSuffix(run.stderr, want) {
					t.Errorf("stderr %q, want it to end with %q", run.stderr, want)
				}
				if run.stdout != "" {
					t.Errorf("stdout %q, want nothing: the work must not run", run.stdout)
				}
				if _, err := os.Stat(workDone); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the work ran without a start marker (stat %q: %v)", workDone, err)
				}
			})
		}
	})
}

// TestConcurrentCasesShareALedger runs 16 wrapped commands at once against
// one ledger, as the rig does, and checks every marker line arrives whole.
func TestConcurrentCasesShareALedger(t *testing.T) {
	const cases = 16
	forEachShell(t, func(t *testing.T, argvFor func(string) []string) {
		t.Parallel()
		ledgerPath := filepath.Join(t.TempDir(), "shared ledger")
		runs := make([]scriptRun, cases)
		var wg sync.WaitGroup
		for i := range cases {
			script, err := Wrap(fmt.Sprintf("case-%02d", i), ledgerPath, fmt.Sprintf("echo %d; exit %d", i, i*10))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { runs[i] = runScript(t, argvFor(script), environWithoutGate()) })
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		data, err := os.ReadFile(ledgerPath)
		if err != nil {
			t.Fatal(err)
		}
		ledger := ParseBytes(data)
		if len(ledger.Malformed) != 0 || len(ledger.Entries) != 2*cases {
			t.Fatalf("want %d entries and no malformed lines, got %d and %v", 2*cases, len(ledger.Entries), ledger.Malformed)
		}
		summaries := ledger.Summaries()
		for i, run := range runs {
			s := summaries[fmt.Sprintf("case-%02d", i)]
			if run.exitCode != i*10 || run.stdout != fmt.Sprintf("%d\n", i) {
				t.Errorf("case %d: exit code %d, stdout %q", i, run.exitCode, run.stdout)
			}
			if s.Starts != 1 || s.Completes != 1 || s.ExitCode == nil || *s.ExitCode != i*10 || len(s.PIDs) != 1 || s.PIDs[0] != run.pid {
				t.Errorf("case %d (pid %d): summary %s", i, run.pid, describeSummary(s))
			}
		}
	})
}

// TestPerHostScript: one per-host script, run with two hosts' ids, marks
// each run with its own host's id; without an id it stops before the start
// marker and does no work.
func TestPerHostScript(t *testing.T) {
	forEachShell(t, func(t *testing.T, argvFor func(string) []string) {
		dir := t.TempDir()
		ledgerPath := filepath.Join(dir, "ledger")
		workDone := filepath.Join(dir, "work done")
		script, err := WrapPerHost(ledgerPath, "echo working; : >"+singleQuote(workDone))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"case-1", "case-2"} {
			if run := runScript(t, argvFor(script), append(environWithoutGate(), HostIDEnv+"="+id)); run.exitCode != 0 {
				t.Fatalf("host %s: exit %d: %s", id, run.exitCode, run.stderr)
			}
		}
		b, err := os.ReadFile(ledgerPath)
		if err != nil {
			t.Fatal(err)
		}
		l := ParseBytes(b)
		for _, id := range []string{"case-1", "case-2"} {
			if s := l.Summary(id); s.Starts != 1 || s.Completes != 1 {
				t.Errorf("host %s: %+v in the ledger, want one start and one complete:\n%s", id, s, b)
			}
		}
		os.Remove(workDone)
		var env []string
		for _, kv := range environWithoutGate() {
			if !strings.HasPrefix(kv, HostIDEnv+"=") {
				env = append(env, kv)
			}
		}
		if run := runScript(t, argvFor(script), env); run.exitCode == 0 {
			t.Errorf("without %s the script exited 0", HostIDEnv)
		}
		if _, err := os.Stat(workDone); !errors.Is(err, os.ErrNotExist) {
			t.Error("the work ran without a host id")
		}
		if after, _ := os.ReadFile(ledgerPath); !bytes.Equal(after, b) {
			t.Errorf("the ledger changed without a host id:\n%s", after)
		}
	})
}

// TestOperationIDInRealShells: a run given an operation id runs the work
// and records the id in its start marker; the same id again, set in front
// of the script or in its environment, does not run the work but leaves a
// dedup marker, says so on stderr and exits with ExitDeduplicated; another
// id, or none, runs the work again. An id that is not valid, or a claim that
// cannot be made, stops the script before anything is written.
func TestOperationIDInRealShells(t *testing.T) {
	forEachShell(t, func(t *testing.T, argvFor func(string) []string) {
		t.Parallel()
		dir := t.TempDir()
		ledgerPath := filepath.Join(dir, "it's a ledger")
		work := filepath.Join(dir, "work")
		script, err := Wrap("case-1", ledgerPath, "echo ran >>"+singleQuote(work)+"; exit 3")
		if err != nil {
			t.Fatal(err)
		}
		prefixed := func(op string) string {
			s, err := WithOperationID(script, op)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		runs := []struct {
			name     string
			script   string
			env      string // an extra NAME=value, or ""
			wantCode int
			wantRan  bool
			wantLine string // the ledger line the run adds, with PID for its pid; "" for none
		}{
			{name: "first with op-1", script: prefixed("op-1"), wantCode: 3, wantRan: true, wantLine: "case-1 start T PID op=op-1"},
			{name: "op-1 again", script: prefixed("op-1"), wantCode: ExitDeduplicated, wantLine: "case-1 dedup T PID op=op-1"},
			{name: "op-1 in the environment", script: script, env: OperationIDEnv + "=op-1", wantCode: ExitDeduplicated, wantLine: "case-1 dedup T PID op=op-1"},
			{name: "op-2", script: prefixed("op-2"), wantCode: 3, wantRan: true, wantLine: "case-1 start T PID op=op-2"},
			{name: "no operation id", script: script, wantCode: 3, wantRan: true, wantLine: "case-1 start T PID"},
			{name: "empty operation id", script: script, env: OperationIDEnv + "=", wantCode: 3, wantRan: true, wantLine: "case-1 start T PID"},
			{name: "id with a space", script: script, env: OperationIDEnv + "=a b", wantCode: ExitNoLedger},
			{name: "id with a quote", script: script, env: OperationIDEnv + "=a'b", wantCode: ExitNoLedger},
			{name: "id starting with a dash", script: script, env: OperationIDEnv + "=-a", wantCode: ExitNoLedger},
			{name: "id with a slash", script: script, env: OperationIDEnv + "=a/../b", wantCode: ExitNoLedger},
			{name: "id of 129 characters", script: script, env: OperationIDEnv + "=" + strings.Repeat("o", 129), wantCode: ExitNoLedger},
			{name: "id of 128 characters", script: script, env: OperationIDEnv + "=" + strings.Repeat("o", 128), wantCode: 3, wantRan: true, wantLine: "case-1 start T PID op=" + strings.Repeat("o", 128)},
		}
		ran := 0
		for _, r := range runs {
			before, _ := os.ReadFile(ledgerPath)
			env := environWithoutGate()
			if r.env != "" {
				env = append(env, r.env)
			}
			run := runScript(t, argvFor(r.script), env)
			if run.exitCode != r.wantCode {
				t.Errorf("%s: exit code %d, want %d (stderr %q)", r.name, run.exitCode, r.wantCode, run.stderr)
			}
			if r.wantRan {
				ran++
			}
			if b, _ := os.ReadFile(work); strings.Count(string(b), "ran\n") != ran {
				t.Errorf("%s: the work ran %d times so far, want %d", r.name, strings.Count(string(b), "ran\n"), ran)
			}
			switch r.wantCode {
			case ExitDeduplicated:
				if want := DedupNotice + "op-1; the work was not run again\n"; run.stderr != want {
					t.Errorf("%s: stderr %q, want %q", r.name, run.stderr, want)
				}
			case ExitNoLedger:
				if !strings.Contains(run.stderr, "is not valid") {
					t.Errorf("%s: stderr %q, want it to say the operation id is not valid", r.name, run.stderr)
				}
			}
			after, _ := os.ReadFile(ledgerPath)
			added := strings.TrimPrefix(string(after), string(before))
			l := ParseBytes([]byte(added))
			if len(l.Malformed) > 0 {
				t.Fatalf("%s: malformed ledger lines %v", r.name, l.Malformed)
			}
			var first string
			if len(l.Entries) > 0 {
				e := l.Entries[0]
				e.Time = time.Time{}
				first = strings.Replace(strings.Replace(e.String(), " - ", " T ", 1), " "+strconv.Itoa(run.pid), " PID", 1)
			}
			if first != r.wantLine {
				t.Errorf("%s: the run added %q to the ledger, want %q first", r.name, added, r.wantLine)
			}
		}
	})
}

// TestOperationIDClaimedOnce runs many wrapped scripts with one operation id
// at once: exactly one runs the work and every other one is de-duplicated.
func TestOperationIDClaimedOnce(t *testing.T) {
	const runs = 12
	forEachShell(t, func(t *testing.T, argvFor func(string) []string) {
		t.Parallel()
		dir := t.TempDir()
		ledgerPath := filepath.Join(dir, "ledger")
		script, err := Wrap("case-1", ledgerPath, "echo ran >>"+singleQuote(filepath.Join(dir, "work")))
		if err != nil {
			t.Fatal(err)
		}
		if script, err = WithOperationID(script, "op-1"); err != nil {
			t.Fatal(err)
		}
		codes := make([]int, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() { codes[i] = runScript(t, argvFor(script), environWithoutGate()).exitCode })
		}
		wg.Wait()
		b, _ := os.ReadFile(ledgerPath)
		s := ParseBytes(b).Summary("case-1")
		work, _ := os.ReadFile(filepath.Join(dir, "work"))
		if s.Starts != 1 || s.Completes != 1 || s.Dedups != runs-1 || string(work) != "ran\n" {
			t.Errorf("ledger %s, work %q; want one start, one complete, %d dedups and the work run once", describeSummary(s), work, runs-1)
		}
		if slices.Sort(codes); codes[0] != 0 || codes[1] != ExitDeduplicated || codes[runs-1] != ExitDeduplicated {
			t.Errorf("exit codes %v, want one 0 and %d of %d", codes, runs-1, ExitDeduplicated)
		}
	})
}

// TestOperationClaimImpossible: where the claim cannot be made (its path is
// taken by a directory) the script does no work and writes nothing.
func TestOperationClaimImpossible(t *testing.T) {
	forEachShell(t, func(t *testing.T, argvFor func(string) []string) {
		dir := t.TempDir()
		ledgerPath := filepath.Join(dir, "ledger")
		if err := os.Mkdir(ledgerPath+".op.case-1.op-1", 0o700); err != nil {
			t.Fatal(err)
		}
		script, err := Wrap("case-1", ledgerPath, "echo ran")
		if err != nil {
			t.Fatal(err)
		}
		if script, err = WithOperationID(script, "op-1"); err != nil {
			t.Fatal(err)
		}
		run := runScript(t, argvFor(script), environWithoutGate())
		if run.exitCode != ExitNoLedger || run.stdout != "" || !strings.Contains(run.stderr, "cannot claim operation op-1") {
			t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, and why", run.exitCode, run.stdout, run.stderr, ExitNoLedger)
		}
		if _, err := os.Stat(ledgerPath); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the ledger was written: %v", err)
		}
	})
}
