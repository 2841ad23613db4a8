package scorerun

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/procs"
	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/reconcile/score"
)

// TestMain checks that no goroutine outlives the tests. The HTTP transports
// testcontainers creates keep idle connections (the container test) until
// they time out; those are not the rig's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

// repoFile is the absolute path of a file in the repository.
func repoFile(t testing.TB, rel string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(here), "..", "..", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func requireSSH(t testing.TB) {
	t.Helper()
	testpeer.Need(t, "ssh")
}

// scoreRun runs a scoring run on the embedded target that must not fail as
// a whole.
func scoreRun(t testing.TB, o score.Options) *score.Report {
	t.Helper()
	return scoreRunOn(t, engine.InProcess{}, o)
}

// scoreRunOn is scoreRun on the target l starts.
func scoreRunOn(t testing.TB, l engine.Launcher, o score.Options) *score.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := runOn(ctx, l, o)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	return rep
}

// runOn starts a target with l, as rig.Reconcile does, and scores on it.
func runOn(ctx context.Context, l engine.Launcher, o score.Options) (*score.Report, error) {
	env, err := engine.Start(ctx, engine.Options{Launcher: l})
	if err != nil {
		return nil, err
	}
	defer env.Close()
	return Run(ctx, env, o)
}

// logReport puts the terminal output in the test log.
func logReport(t testing.TB, rep *score.Report) {
	t.Helper()
	var b strings.Builder
	rep.WriteText(&b)
	t.Logf("\n%s%s", b.String(), rep.SummaryLine())
}

// allCorrect fails unless every state was produced and answered right,
// without findings: the diagonal of the matrix, and nothing else.
func allCorrect(t testing.TB, rep *score.Report) {
	t.Helper()
	if rep.Summary.Failed() || rep.Summary.Inconclusive > 0 || rep.Summary.Correct != len(reconcile.Scenarios()) {
		logReport(t, rep)
		t.Fatalf("not every state answered right: %s", rep.SummaryLine())
	}
	for i, s := range rep.Matrix.Rows {
		for j, c := range rep.Matrix.Columns {
			want := 0
			if c == string(s.Want()) {
				want = 1
			}
			if got := rep.Matrix.Counts[i][j]; got != want {
				t.Errorf("matrix[%s][%s] = %d, want %d", s, c, got, want)
			}
		}
	}
	for _, row := range rep.Rows {
		if len(row.Findings) > 0 {
			t.Errorf("%s: findings %v", row.State, row.Findings)
		}
	}
}

// leftOnTarget lists live processes working in the embedded target's
// scratch directory (the ledger's): everything the target ran has its
// working directory there, so after a run there must be none.
func leftOnTarget(t testing.TB, rep *score.Report) []string {
	t.Helper()
	scratch := filepath.Dir(rep.Ledger)
	if !strings.HasPrefix(rep.Where, "embedded") || !filepath.IsAbs(scratch) {
		t.Fatalf("not an embedded target: %s, ledger %s", rep.Where, rep.Ledger)
	}
	dirs, _ := os.ReadDir("/proc")
	var out []string
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + d.Name() + "/cwd")
		if err != nil {
			continue // gone, or a zombie
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if cwd == scratch || strings.HasPrefix(cwd, scratch+"/") {
			cmd, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
			out = append(out, d.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// Acceptance 1 (embedded): each example probe scores every state of its
// operation correctly, run locally (it reaches the target with ssh) and on
// the target, and nothing the operation or the probe started is left.
func TestExamples(t *testing.T) {
	eachExample(t, func(t *testing.T, o score.Options) {
		t.Parallel()
		rep := scoreRun(t, o)
		logReport(t, rep)
		allCorrect(t, rep)
		if left := leftOnTarget(t, rep); len(left) > 0 {
			t.Errorf("processes left on the target: %q", left)
		}
	})
}

// eachExample runs f as a subtest for every operation's example probe, run
// locally (skipped without OpenSSH's client) and on the target.
func eachExample(t *testing.T, f func(t *testing.T, o score.Options)) {
	for _, op := range score.Operations() {
		for _, remote := range []bool{false, true} {
			name := op.Name + "/local"
			if remote {
				name = op.Name + "/remote"
			}
			t.Run(name, func(t *testing.T) {
				o := score.Options{Operation: &op, Remote: remote, Probe: repoFile(t, op.Example)}
				if remote {
					o.Probe = readFile(t, o.Probe)
				} else {
					requireSSH(t)
				}
				f(t, o)
			})
		}
	}
}

// The faulty probes of acceptance 2, run on the target. Each reads the
// ledger, and each has one realistic defect.
const (
	alwaysCompleted = `echo '{"state": "completed", "evidence": "it always works"}'`
	// A start marker without a complete marker is taken for "nothing
	// happened yet", which is what licenses a second run.
	startedIsNotStarted = `set -- $(awk -v id="$SSHRIG_CORRELATION_ID" '
	$1 == id && $2 == "start" { s++ }
	$1 == id && $2 == "complete" { c++; rc = $3 }
	END { print s + 0, c + 0, (rc == "" ? "-" : rc) }' "$SSHRIG_LEDGER")
if [ "$1" -gt 1 ]; then echo '{"state": "duplicated"}'
elif [ "$2" -eq 0 ]; then echo '{"state": "not_started", "evidence": "no complete marker"}'
elif [ "$3" -eq 0 ]; then echo '{"state": "completed"}'
else echo '{"state": "failed"}'; fi`
	// The ledger's last line decides, whoever wrote it.
	ignoresID = `set -- $(tail -n 1 "$SSHRIG_LEDGER")
case "${2:-}" in
start) if kill -0 "$4" 2>/dev/null; then echo '{"state": "in_progress"}'; else echo '{"state": "failed"}'; fi ;;
complete) if [ "$3" -eq 0 ]; then echo '{"state": "completed"}'; else echo '{"state": "failed"}'; fi ;;
*) echo '{"state": "not_started"}' ;;
esac`
)

// Acceptance 2: each faulty probe fails, with exactly its wrong cells named.
func TestFaultyProbes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe string
		wrong []string
	}{
		{"always completed", alwaysCompleted, []string{
			"truth never-started, probe said completed",
			"truth started-and-killed, probe said completed",
			"truth still-running, probe said completed",
			"truth completed-nonzero, probe said completed",
			"truth executed-twice, probe said completed",
		}},
		{"confuses started with not started", startedIsNotStarted, []string{
			"truth started-and-killed, probe said not_started",
			"truth still-running, probe said not_started",
		}},
		// The preflight's markers are the last in the ledger when the
		// never-started state is probed, and the second run's when the
		// executed-twice state is.
		{"ignores the id", ignoresID, []string{
			"truth never-started, probe said completed",
			"truth executed-twice, probe said completed",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			script := filepath.Join(dir, "probe.sh")
			if err := os.WriteFile(script, []byte(tc.probe+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			rep := scoreRun(t, score.Options{Remote: true, Probe: readFile(t, script)})
			logReport(t, rep)
			if !rep.Summary.Failed() || rep.Summary.Wrong != len(tc.wrong) {
				t.Fatalf("%s: want %d wrong answers", rep.SummaryLine(), len(tc.wrong))
			}
			var got []string
			for _, c := range rep.WrongCells {
				got = append(got, c.Text)
			}
			if !slices.Equal(got, tc.wrong) {
				t.Errorf("wrong cells\n  %q\nwant\n  %q", got, tc.wrong)
			}
			if rep.Summary.Correct != len(reconcile.Scenarios())-len(tc.wrong) || rep.Summary.Inconclusive != 0 {
				t.Errorf("the other states are not all correct: %s", rep.SummaryLine())
			}
		})
	}
}

// badScenarios are produced for the probes that break the contract: one
// whose command has ended, and one whose command runs during the probe.
var badScenarios = []reconcile.Scenario{reconcile.NeverStarted, reconcile.StillRunning}

// Acceptance 3: probes that hang, crash or print garbage each get their
// finding, on every state, and nothing they started is left running —
// here, or on the target.
func TestBrokenProbes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		remote  bool
		probe   string
		timeout time.Duration
		kind    string
		detail  string
		trace   string // a process that must not outlive the run
	}{
		{"local hang", false, "sleep 4171 & exec sleep 4172", time.Second, score.FindingHang, "no answer within 1s (--probe-timeout); the rig killed its process group", "sleep 417"},
		{"local crash by signal", false, "kill -SEGV $$", 0, score.FindingCrash, "killed by a signal", ""},
		{"local crash by exit", false, "echo 'cannot reach the target' >&2; exit 4", 0, score.FindingCrash, "exited 4 without a valid answer (empty output; want one JSON object such as {\"state\": \"not_started\", \"evidence\": \"...\"}); its stderr ends: cannot reach the target", ""},
		{"local garbage", false, "echo 'all good!'", 0, score.FindingMalformed, "invalid JSON at offset 0", ""},
		{"local two answers", false, `echo '{"state": "failed"}'; echo '{"state": "completed"}'`, 0, score.FindingMalformed, "trailing data after the JSON object at offset 20", ""},
		{"local 1 MB of output", false, "head -c 1000000 /dev/zero | tr '\\0' x", 0, score.FindingMalformed, "printed 1000000 bytes; an answer is at most 65536 bytes", ""},
		{"local answer without state", false, `echo '{"evidence": "looks fine"}'`, 0, score.FindingMalformed, `missing field "state"`, ""},
		{"local grandchild left running", false, `(sleep 3172 &); echo '{"state": "unknown"}'`, 0, score.FindingLeftRunning, "of the probe's process group were still running after it exited; the rig killed them", "sleep 3172"},
		{"remote hang", true, "sleep 3173", time.Second, score.FindingHang, "the rig closed its session and killed its processes on the target", "sleep 3173"},
		{"remote crash by signal", true, "kill -SEGV $$", 0, score.FindingCrash, "killed by a signal (SIGSEGV)", ""},
		{"remote garbage", true, "echo nope", 0, score.FindingMalformed, "invalid JSON at offset 1: invalid character 'o' in literal null", ""},
		{"remote job left running", true, `sleep 3175 >/dev/null 2>&1 & echo '{"state": "unknown"}'`, 0, score.FindingLeftRunning, "of the probe's process groups on the target were still running after it ended; the rig killed them", "sleep 3175"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := scoreRun(t, score.Options{Probe: tc.probe, Remote: tc.remote, ProbeTimeout: tc.timeout, Scenarios: badScenarios})
			logReport(t, rep)
			if !rep.Summary.Failed() || rep.Summary.Inconclusive > 0 {
				t.Errorf("the run did not fail: %s", rep.SummaryLine())
			}
			for _, row := range rep.Rows {
				found := false
				for _, f := range row.Findings {
					found = found || f.Kind == tc.kind && strings.Contains(f.Detail, tc.detail)
				}
				if !found {
					t.Errorf("%s: findings %+v; want %s mentioning %q", row.State, row.Findings, tc.kind, tc.detail)
				}
				if tc.kind != score.FindingLeftRunning && (row.Answer != nil || row.Mark != reconcile.NoAnswer) {
					t.Errorf("%s: answer %+v, mark %s; want no answer", row.State, row.Answer, row.Mark)
				}
			}
			if tc.trace != "" {
				if left := procs.Named(tc.trace); len(left) > 0 {
					t.Errorf("processes left behind: %v", left)
				}
			}
			if left := leftOnTarget(t, rep); len(left) > 0 {
				t.Errorf("processes left on the target: %q", left)
			}
		})
	}
}

// A probe that runs the operation again instead of inspecting it is caught
// by the server's own record of its commands.
func TestProbeThatRerunsTheOperation(t *testing.T) {
	requireSSH(t)
	probe := repoFile(t, "docs/examples/ssh-honest.sh") + ` >/dev/null; echo '{"state": "completed", "evidence": "ran it again to be sure"}'`
	rep := scoreRun(t, score.Options{Probe: probe, Scenarios: []reconcile.Scenario{reconcile.NeverStarted}})
	logReport(t, rep)
	row := rep.Rows[0]
	if len(row.Findings) != 1 || row.Findings[0].Kind != score.FindingReran || !rep.Summary.Failed() {
		t.Fatalf("findings %+v, want one %s", row.Findings, score.FindingReran)
	}
}

// A state the rig fails to produce is inconclusive and not scored; an
// operation that cannot even complete stops the run before any probe.
func TestNotProduced(t *testing.T) {
	base, _ := score.LookupOperation(score.DefaultOperation)
	t.Run("state", func(t *testing.T) {
		t.Parallel()
		op := base
		op.Name = "never_blocks"
		op.Command = func(v score.Variant) string {
			if v == score.Block {
				return "echo 'done already'" // never says it is under way
			}
			return base.Command(v)
		}
		rep := scoreRun(t, score.Options{Operation: &op, Remote: true, Probe: alwaysCompleted, Scenarios: []reconcile.Scenario{reconcile.StillRunning, reconcile.CompletedZero}})
		logReport(t, rep)
		row := rep.Rows[0]
		if row.Mark != reconcile.Inconclusive || row.Answer != nil || !strings.Contains(row.NotProduced, "the rig's fault, not the probe's") {
			t.Fatalf("still-running: mark %s, answer %+v, not produced %q", row.Mark, row.Answer, row.NotProduced)
		}
		if rep.Summary.Inconclusive != 1 || rep.Summary.Correct != 1 || rep.Summary.Failed() {
			t.Errorf("summary %s", rep.SummaryLine())
		}
		for j := range rep.Matrix.Columns {
			if n := rep.Matrix.Counts[2][j]; n != 0 {
				t.Errorf("the unproduced state is counted in the matrix: %v", rep.Matrix.Counts[2])
			}
		}
	})
	t.Run("preflight", func(t *testing.T) {
		t.Parallel()
		op := base
		op.Name = "cannot_set_up"
		op.Setup = "echo 'no such service' >&2; exit 1"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep, err := runOn(ctx, engine.InProcess{}, score.Options{Operation: &op, Remote: true, Probe: alwaysCompleted})
		var pre *score.PreflightError
		if err == nil || !asPreflight(err, &pre) || !strings.Contains(pre.Reason, "set-up failed: exit 1; output: no such service") {
			t.Fatalf("err %v, want a preflight error about the set-up", err)
		}
		if rep == nil || len(rep.Rows) != 0 {
			t.Errorf("states were produced after a failed preflight: %+v", rep)
		}
	})
}

func asPreflight(err error, pre **score.PreflightError) bool {
	p, ok := err.(*score.PreflightError)
	*pre = p
	return ok
}

// The probe's SSHRIG_* environment is the external tools' one plus
// SSHRIG_LEDGER, with the state's id; on the target, the three variables.
func TestProbeEnvironment(t *testing.T) {
	dir := t.TempDir()
	local := `env | grep '^SSHRIG_' | sort >"` + dir + `/env-$SSHRIG_CORRELATION_ID"; echo '{"state": "unknown"}'`
	rep := scoreRun(t, score.Options{Probe: local, Scenarios: []reconcile.Scenario{reconcile.CompletedZero}})
	env := readFile(t, filepath.Join(dir, "env-"+rep.Rows[0].CorrelationID))
	for _, v := range []string{"SSHRIG_ADDR=127.0.0.1:", "SSHRIG_HOST=127.0.0.1", "SSHRIG_PORT=", "SSHRIG_USER=sshrig",
		"SSHRIG_IDENTITY=/", "SSHRIG_KNOWN_HOSTS=/", "SSHRIG_CORRELATION_ID=" + rep.Rows[0].CorrelationID,
		"SSHRIG_OPERATION=run_workload", "SSHRIG_COMMAND=sshrig_id=" + rep.Rows[0].CorrelationID, "SSHRIG_DEADLINE_MS=10000",
		"SSHRIG_LEDGER=" + rep.Ledger} {
		if !strings.Contains(env, "\n"+v) && !strings.HasPrefix(env, v) {
			t.Errorf("the probe's environment lacks %s:\n%s", v, env)
		}
	}

	remote := `printf '{"state": "unknown", "evidence": "%s %s %s"}\n' "$SSHRIG_CORRELATION_ID" "$SSHRIG_OPERATION" "$SSHRIG_LEDGER"`
	rep = scoreRun(t, score.Options{Probe: remote, Remote: true, Scenarios: []reconcile.Scenario{reconcile.CompletedZero}})
	if got, want := rep.Rows[0].Answer.Evidence, rep.Rows[0].CorrelationID+" run_workload "+rep.Ledger; got != want {
		t.Errorf("on the target the probe saw %q, want %q", got, want)
	}
}

// The launcher is the target: the default is the embedded one.
var _ engine.Launcher = engine.InProcess{}

// A probe that prints the run's private key gets a secret finding, and no
// file the run writes, nor its terminal output, holds the key.
func TestProbeThatPrintsTheKey(t *testing.T) {
	keyCopy := filepath.Join(t.TempDir(), "key")
	out := t.TempDir()
	probe := `cp "$SSHRIG_IDENTITY" ` + keyCopy + `; cat "$SSHRIG_IDENTITY" >&2; ` +
		`printf '{"state": "not_started", "evidence": "%s"}\n' "$(sed -n 2p "$SSHRIG_IDENTITY")"`
	rep := scoreRun(t, score.Options{Probe: probe, Scenarios: []reconcile.Scenario{reconcile.NeverStarted},
		WriteFile: func(name string, data []byte) error {
			p := filepath.Join(out, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			return os.WriteFile(p, data, 0o644)
		}})
	row := rep.Rows[0]
	if !slices.ContainsFunc(row.Findings, func(f score.Finding) bool { return f.Kind == score.FindingSecret }) || !rep.Summary.Failed() {
		logReport(t, rep)
		t.Fatalf("findings %+v, want a %s finding", row.Findings, score.FindingSecret)
	}
	b, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out, "report.json"), b, 0o644)
	var text strings.Builder
	rep.WriteText(&text)
	os.WriteFile(filepath.Join(out, "terminal.txt"), []byte(text.String()), 0o644)

	var keyLines []string
	for _, l := range strings.Split(readFile(t, keyCopy), "\n") {
		if len(l) >= 40 && !strings.HasPrefix(l, "-----") {
			keyLines = append(keyLines, l)
		}
	}
	if len(keyLines) == 0 {
		t.Fatal("the probe copied no key")
	}
	files := 0
	filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		files++
		data := readFile(t, p)
		for _, l := range keyLines {
			if strings.Contains(data, l) {
				t.Errorf("%s contains key material", p)
			}
		}
		if strings.Contains(data, "PRIVATE KEY-----") {
			t.Errorf("%s contains a PEM armour line", p)
		}
		return nil
	})
	if files < 3 {
		t.Fatalf("scanned %d files, want report, transcript and terminal output", files)
	}
}
