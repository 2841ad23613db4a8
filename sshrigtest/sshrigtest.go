package sshrigtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/tool"
)

// Harness runs cases against tools. Make one with New; it is safe to use
// from one test at a time.
type Harness struct {
	cases    []matrix.Case
	target   rig.Target
	net      rig.Net
	parallel int
	budget   time.Duration
	runDir   func(testing.TB) string
}

// An Option configures a Harness.
type Option func(*Harness)

// WithTarget sets where the SSH server runs (default: rig.Embedded()).
func WithTarget(t rig.Target) Option { return func(h *Harness) { h.target = t } }

// WithNet sets where the tool meets the server (default rig.NetProxy). On
// rig.NetKernel the server is reachable only from the tool's network
// namespace: a tool dials with tool.Target.Dial (docs/network.md).
func WithNet(n rig.Net) Option { return func(h *Harness) { h.net = n } }

// WithCases replaces the default matrix as the cases Run selects from.
func WithCases(cases []matrix.Case) Option {
	return func(h *Harness) { h.cases = append([]matrix.Case(nil), cases...) }
}

// WithParallel runs n cases at once (default rig.DefaultParallel).
func WithParallel(n int) Option { return func(h *Harness) { h.parallel = n } }

// WithBudget sets the deadline a tool gets per case (default rig.DefaultBudget).
func WithBudget(d time.Duration) Option { return func(h *Harness) { h.budget = d } }

// WithRunDir keeps each run's directory (report.json, events.jsonl,
// transcripts/) under dir, one subdirectory per run, instead of a temporary
// directory that the test removes.
func WithRunDir(dir string) Option {
	return func(h *Harness) {
		h.runDir = func(t testing.TB) string {
			return rig.DefaultRunDir(dir, time.Now())
		}
	}
}

// New returns a harness for t. Nothing starts until Run or RunCase.
func New(t testing.TB, opts ...Option) *Harness {
	t.Helper()
	h := &Harness{cases: matrix.DefaultMatrix(),
		runDir: func(t testing.TB) string { return t.TempDir() + "/run" }}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Run runs the cases whose id or alias matches one of globs (every case when
// there are none) against tl, then one subtest per case, named by its id.
// It returns the report, or nil when the rig could not run (t has failed).
func (h *Harness) Run(t *testing.T, tl tool.Tool, globs ...string) *report.Report {
	t.Helper()
	cases, err := matrix.Select(h.cases, globs)
	if err != nil {
		t.Fatalf("sshrigtest: %v", err)
	}
	if len(cases) == 0 {
		t.Fatalf("sshrigtest: no case matches %q", globs)
	}
	rep := h.report(t, tl, cases)
	if rep == nil {
		return nil
	}
	for _, cr := range rep.Cases {
		t.Run(cr.ID, func(t *testing.T) {
			switch cr.Verdict {
			case report.Skipped:
				t.Skip(cr.Reason)
			case report.Fail, report.Inconclusive:
				t.Error(Explain(cr))
			}
		})
	}
	return rep
}

// RunCase runs the one case c against tl and returns its report, for a test
// that makes its own assertions; it fails t only when the rig could not run.
func (h *Harness) RunCase(t testing.TB, tl tool.Tool, c matrix.Case) report.CaseReport {
	t.Helper()
	rep := h.report(t, tl, []matrix.Case{c})
	if rep == nil {
		t.FailNow()
	}
	return rep.Cases[0]
}

// report runs the cases and stops t when the rig itself could not run.
func (h *Harness) report(t testing.TB, tl tool.Tool, cases []matrix.Case) *report.Report {
	t.Helper()
	dir, err := rig.CreateRunDir(h.runDir(t))
	if err != nil {
		t.Fatalf("sshrigtest: run directory: %v", err)
	}
	// Registered before anything can fail: the log is closed whatever happens.
	t.Cleanup(func() { dir.Close() })
	rep, err := rig.Run(t.Context(), rig.Options{Tool: tl, Cases: cases,
		Parallel: h.parallel, Budget: h.budget, Target: h.target, Net: h.net, Out: dir})
	var pre *report.PreflightError
	switch {
	case errors.As(err, &pre):
		msg := fmt.Sprintf("sshrigtest: %v: the tool cannot run a case with no fault, so no case can be judged", pre)
		if pre.Case != nil {
			msg += "\n" + Explain(*pre.Case)
		}
		t.Fatal(msg)
	case err != nil:
		t.Fatalf("sshrigtest: %v", err)
	}
	t.Logf("sshrigtest: %s; run directory %s", rep.SummaryLine(), dir.Path)
	return rep
}

// Explain says what happened in a case, as a failed subtest reports it:
// the verdict, what the tool reported, what was honest, what really happened
// remotely, and each violation with its assertion.
func Explain(cr report.CaseReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", cr.ID, cr.Verdict)
	if cr.Grade != "" {
		fmt.Fprintf(&b, " (%s)", cr.Grade)
	}
	if cr.Reason != "" {
		fmt.Fprintf(&b, ": %s", cr.Reason)
	}
	switch {
	case cr.Reported != nil:
		fmt.Fprintf(&b, "\n  reported: %s/%s %q", cr.Reported.Category, cr.Reported.Retry, cr.Reported.Message)
	case cr.ParseError != "":
		fmt.Fprintf(&b, "\n  reported: no valid result (%s)", cr.ParseError)
	default:
		b.WriteString("\n  reported: nothing")
	}
	fmt.Fprintf(&b, "\n  honest:   %s/%s", cr.Expected.Category, cr.Expected.Retry)
	if tr := cr.Truth; tr != nil {
		fmt.Fprintf(&b, "\n  remotely: %s (%d start, %d complete marker(s)", tr.State, tr.Starts, tr.Completes)
		if tr.ExitCode != nil {
			fmt.Fprintf(&b, ", exit %d", *tr.ExitCode)
		}
		b.WriteString(")")
	}
	for _, v := range cr.Violations {
		fmt.Fprintf(&b, "\n  violation: %s", v)
	}
	if cr.Transcript != "" {
		fmt.Fprintf(&b, "\n  transcript: %s", cr.Transcript)
	}
	return b.String()
}

// Func makes a tool of a Go function: the harness calls f for every attempt
// and prints the result it returns. f should return within t.Deadline; ctx
// ends when the rig gives up on it.
func Func(name string, f func(ctx context.Context, t tool.Target) result.Result) tool.Tool {
	return funcTool{name: name, f: f}
}

type funcTool struct {
	name string
	f    func(context.Context, tool.Target) result.Result
}

func (ft funcTool) Name() string { return ft.name }

func (ft funcTool) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	b, err := ft.f(ctx, t).Marshal()
	if err != nil {
		// An invalid result is the tool's defect; the rig judges it malformed.
		fmt.Fprintf(stderr, "sshrigtest: %s returned a result that cannot be encoded: %v\n", ft.name, err)
		return
	}
	stdout.Write(append(b, '\n'))
}

// Exec makes a tool of a program, run as `sshrig run --tool exec:…` runs
// it: the target in SSHRIG_* variables (tool.Target.Environ), the result read
// from its stdout, its process group killed when its case ends.
func Exec(argv ...string) (tool.Tool, error) {
	if len(argv) == 0 {
		return nil, errors.New("sshrigtest: Exec: no program")
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("sshrigtest: Exec: %w", err)
	}
	return tools.External{Argv: append([]string(nil), argv...)}, nil
}
