package rig

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var matrixReps = flag.Int("sshrig.matrix-reps", 20, "consecutive whole-matrix runs in TestReferenceStable")

func runTool(t *testing.T, tl tool.Tool, globs []string, out *RunDir) *report.Report {
	t.Helper()
	return runOptions(t, globs, Options{Tool: tl, Out: out})
}

// runOptions runs o on the default matrix's cases that globs select.
func runOptions(t *testing.T, globs []string, o Options) *report.Report {
	t.Helper()
	cases, err := matrix.Select(matrix.DefaultMatrix(), globs)
	if err != nil {
		t.Fatal(err)
	}
	o.Cases = cases
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return rep
}

// TestReferenceStable runs the whole matrix repeatedly: the reference tool
// must show zero violations and zero inconclusive cases every time. The
// rounds are one repeated run (each round every case once, in an order
// drawn from the seed, the next round's cases starting as the last
// round's end), so 20 rounds take about as long as eight runs one after
// another would, each waiting out its slowest case.
func TestReferenceStable(t *testing.T) {
	t.Parallel() // beside the tests that mostly wait (TestRealClients)
	reps := *matrixReps
	if testing.Short() {
		reps = 1
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (the order of the rounds' cases)", seed)
	rep := runOptions(t, nil, Options{Tool: tools.Reference{}, Repeat: Repeat{Times: reps, Seed: seed}})
	const passing = 67 // every case of the default matrix but kill-helper's, which an in-process tool skips
	if rep.Summary.Pass+rep.Summary.Skipped != rep.Summary.Cases || rep.Summary.Pass != passing*reps {
		for _, c := range rep.Cases {
			if c.Verdict != report.Pass && c.Verdict != report.Skipped {
				t.Errorf("%s %s: %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
			}
		}
		t.Fatalf("%d rounds: %s", reps, rep.SummaryLine())
	}
	t.Logf("%d rounds of the whole matrix, every case passed every time (%s)", reps, rep.SummaryLine())
}

// scriptedTool prints a fixed stdout.
type scriptedTool struct {
	name string
	out  func(tool.Target) string
}

func (s scriptedTool) Name() string { return s.name }
func (s scriptedTool) Run(_ context.Context, t tool.Target, stdout, _ io.Writer) {
	io.WriteString(stdout, s.out(t))
}

func TestPreflightStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  func(tool.Target) string
		want string
	}{
		{"garbage", func(tool.Target) string { return "hello" }, "does not parse"},
		{"nothing", func(tool.Target) string { return "" }, "does not parse"},
		{"claims failure", func(t tool.Target) string {
			return fmt.Sprintf(`{"ok":false,"category":"local_failure","operation":"%s","retry":"bounded","correlation_id":"%s"}`, t.Operation, t.CorrelationID)
		}, "reported local_failure"},
		{"never runs the command", func(t tool.Target) string {
			return fmt.Sprintf(`{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s"}`, t.Operation, t.CorrelationID)
		}, "exactly one start and one complete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := Run(ctx, Options{Tool: scriptedTool{tc.name, tc.out}, Cases: matrix.DefaultMatrix()[:2]})
			pe, ok := err.(*report.PreflightError)
			if !ok || !strings.Contains(pe.Reason, tc.want) {
				t.Fatalf("err %v, want a preflight error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestReportShape checks report.json has the fields users script against,
// and that JUnit output is well-formed.
func TestReportShape(t *testing.T) {
	dir, err := CreateRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rep := runTool(t, tools.Reference{}, []string{"started.reset.*", "none.exit3"}, dir)
	b, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	dir.WriteFile("report.json", b)
	if err := dir.Close(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	summary := doc["summary"].(map[string]any)
	for _, k := range []string{"cases", "pass", "fail", "inconclusive", "skipped", "duration_ms"} {
		if _, ok := summary[k]; !ok {
			t.Errorf("summary.%s missing", k)
		}
	}
	cases := doc["cases"].([]any)
	if len(cases) != 4 {
		t.Fatalf("%d cases in report, want 4", len(cases))
	}
	for _, c := range cases {
		cm := c.(map[string]any)
		for _, k := range []string{"id", "moment", "cut", "disposition", "tool", "verdict", "grade", "correlation_id", "reported", "truth", "violations", "duration_ms"} {
			if _, ok := cm[k]; !ok {
				t.Errorf("case %v: %s missing", cm["id"], k)
			}
		}
		truth := cm["truth"].(map[string]any)
		for _, k := range []string{"state", "starts", "completes", "exit_code"} {
			if _, ok := truth[k]; !ok {
				t.Errorf("case %v: truth.%s missing", cm["id"], k)
			}
		}
		tx := filepath.Join(dir.Path, cm["transcript"].(string))
		if _, err := os.Stat(tx); err != nil {
			t.Errorf("transcript: %v", err)
		}
	}
	j, err := rep.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var suites xSuites
	if err := xml.Unmarshal(j, &suites); err != nil || len(suites.Suites[0].Cases) != 4 {
		t.Fatalf("junit: %v, %+v", err, suites)
	}
	events, err := os.ReadFile(filepath.Join(dir.Path, "events.jsonl"))
	if err != nil || len(events) == 0 {
		t.Fatalf("events.jsonl: %v (%d bytes)", err, len(events))
	}
}

// TestRunDirHasNoKeyMaterial runs the tool that leaks its identity and scans
// every file of the run directory for the key.
func TestRunDirHasNoKeyMaterial(t *testing.T) {
	dir, err := CreateRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	leaker, _ := tools.Lookup("mutant:leaks-identity")
	var keyLines []string
	var mu sync.Mutex
	spy := spyTool{inner: leaker, saw: func(t tool.Target) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := os.ReadFile(t.Identity)
		for _, l := range strings.Split(string(b), "\n") {
			if len(l) >= 40 && !strings.HasPrefix(l, "-----") {
				keyLines = append(keyLines, l)
			}
		}
	}}
	rep := runTool(t, spy, []string{"started.reset.survive", "none.exit3"}, dir)
	b, _ := rep.JSON()
	dir.WriteFile("report.json", b)
	dir.Close()
	if rep.Summary.Fail != 2 {
		t.Fatalf("leaking tool: %s", rep.SummaryLine())
	}
	if len(keyLines) == 0 {
		t.Fatal("saw no key")
	}
	filepath.Walk(dir.Path, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		for _, l := range keyLines {
			if strings.Contains(string(data), l) {
				t.Errorf("%s contains key material", p)
			}
		}
		if strings.Contains(string(data), "PRIVATE KEY-----\\n") || strings.Contains(string(data), "PRIVATE KEY-----\n") {
			t.Errorf("%s contains a PEM block", p)
		}
		return nil
	})
}

type spyTool struct {
	inner tool.Tool
	saw   func(tool.Target)
}

func (s spyTool) Name() string { return s.inner.Name() }
func (s spyTool) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	s.saw(t)
	s.inner.Run(ctx, t, stdout, stderr)
}

// BenchmarkDefaultMatrix measures the whole default matrix with the
// reference tool at the default parallelism.
func BenchmarkDefaultMatrix(b *testing.B) {
	for b.Loop() {
		start := time.Now()
		ctx := context.Background()
		rep, err := Run(ctx, Options{Tool: tools.Reference{}, Cases: matrix.DefaultMatrix()})
		if err != nil || rep.Summary.Fail+rep.Summary.Inconclusive != 0 {
			b.Fatalf("%v %v", err, rep.SummaryLine())
		}
		d := time.Since(start)
		b.ReportMetric(d.Seconds(), "s/matrix")
		b.ReportMetric(float64(rep.Summary.Executed())/d.Seconds(), "cases/s")
	}
}

// TestMatrixDocFields: docs/matrix.md documents exactly the fields the loader
// knows, in a table whose first column is `field`.
func TestMatrixDocFields(t *testing.T) {
	doc, err := os.ReadFile("../docs/matrix.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := regexp.MustCompile("^\\| `([a-z_]+)` \\|").FindStringSubmatch(line); m != nil {
			documented[m[1]] = true
		}
	}
	for _, f := range matrix.MatrixFields() {
		if !documented[f] {
			t.Errorf("field %q is not documented in docs/matrix.md", f)
		}
		delete(documented, f)
	}
	for f := range documented {
		t.Errorf("docs/matrix.md documents %q, which the loader does not know", f)
	}
	// The example in the doc loads as written.
	if _, err := matrix.LoadMatrixFile("../docs/examples/matrix.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestMissingResultEventFailsEvidence: the verdict checks the event log; a
// case whose result event never reached it fails assertion 4, the others pass.
func TestMissingResultEventFailsEvidence(t *testing.T) {
	dir, err := CreateRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir.filter = func(e eventlog.Entry) bool {
		return !(e.Event == "result" && e.Case == "started.reset.survive")
	}
	rep := runTool(t, tools.Reference{}, []string{"started.reset.survive", "none.exit0"}, dir)
	dir.Close()
	for _, c := range rep.Cases {
		switch c.ID {
		case "started.reset.survive":
			if c.Verdict != report.Fail || len(c.Violations) != 1 || c.Violations[0].Assertion != report.AssertEvidence || c.Violations[0].Rule != verdict.RuleLogMissing {
				t.Errorf("%s: %s %v; want a fail on evidence/log_missing", c.ID, c.Verdict, c.Violations)
			}
		default:
			if c.Verdict != report.Pass {
				t.Errorf("%s: %s %v", c.ID, c.Verdict, c.Violations)
			}
		}
	}
}

// TestRunWithoutDirLeavesNothing: a run given no run directory still judges
// assertion 4 on a real event log, in a temporary directory it removes, and
// its report names no file.
func TestRunWithoutDirLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases, err := matrix.Select(matrix.DefaultMatrix(), []string{"none.exit0", "started.reset.hangup"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, Options{Tool: tools.Reference{}, Cases: cases})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		if c.Verdict != report.Pass || c.Transcript != "" {
			t.Errorf("%s: verdict %s, transcript %q", c.ID, c.Verdict, c.Transcript)
		}
	}
	if rep.LogHead != "" {
		t.Errorf("log head %q of a log that is gone", rep.LogHead)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "sshrig-run-*"))
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
