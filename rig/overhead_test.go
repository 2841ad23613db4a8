package rig

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/plainssh"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/markers"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/tool"
)

// BenchmarkCaseOverhead compares, in one run, a whole case of the default
// workload through the rig (set-up, the tool's exec of the wrapped command,
// completion, the truth probe, the verdict, teardown) with a bare SSH exec
// of the same unwrapped command by the same client (the reference tool) to a
// plain SSH server on loopback (package plainssh) that runs commands with
// /bin/sh -c and knows nothing of cases, cuts or markers. It also runs the wrapped command bare,
// so the marker wrapper's own cost is measured beside the rig's.
//
// A rig case's cost is the difference between a run of caseRuns+1 case runs
// of none.exit0 and a run of one (server start, preflight and report are in
// both), divided by caseRuns, one case at a time. Each iteration measures
// the three in turn, so the machine's load falls on all of them alike.
//
//	go test -run '^$' -bench BenchmarkCaseOverhead -benchtime 5x ./rig
func BenchmarkCaseOverhead(b *testing.B) {
	const caseRuns = 100
	bare := bareTarget(b)
	none, err := matrix.Select(matrix.DefaultMatrix(), []string{"none.exit0"})
	if err != nil {
		b.Fatal(err)
	}
	workload := none[0].Workload("")
	wrapped, err := markers.Wrap("bench-wrapper", filepath.Join(b.TempDir(), "ledger"), workload)
	if err != nil {
		b.Fatal(err)
	}
	runRig := func(times int) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		rep, err := Run(ctx, Options{Tool: tools.Reference{}, Cases: none, Parallel: 1, Repeat: Repeat{Times: times, Seed: 1}})
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Summary.Pass != times {
			b.Fatalf("%d case runs: %s", times, rep.SummaryLine())
		}
		return d
	}
	var rigCase, bareExec, bareWrapped []time.Duration
	for b.Loop() {
		one := runRig(1)
		many := runRig(caseRuns + 1)
		rigCase = append(rigCase, (many-one)/caseRuns)
		bareExec = append(bareExec, meanExec(b, bare, workload, caseRuns))
		bareWrapped = append(bareWrapped, meanExec(b, bare, wrapped, caseRuns))
	}
	rc, be, bw := median(rigCase), median(bareExec), median(bareWrapped)
	b.ReportMetric(ms(rc), "ms/rig-case")
	b.ReportMetric(ms(be), "ms/bare-exec")
	b.ReportMetric(ms(bw), "ms/bare-wrapped-exec")
	b.ReportMetric(ms(bw-be), "ms/wrapper")
	b.ReportMetric(float64(rc)/float64(be), "rig/bare")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// bareTarget starts an SSH server with no rig in it (package plainssh) and
// returns the reference tool's target for it.
func bareTarget(b *testing.B) tool.Target {
	b.Helper()
	srv, err := plainssh.Start(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	return tool.Target{Addr: srv.Addr, User: "bench", Identity: srv.Identity, KnownHosts: srv.KnownHosts,
		CorrelationID: "bench", Operation: matrix.DefaultOperation, Deadline: DefaultBudget}
}

// meanExec runs command n times on t with the reference tool and returns the
// mean time of one run; every run must succeed.
func meanExec(b *testing.B, t tool.Target, command string, n int) time.Duration {
	b.Helper()
	t.Command = command
	var out bytes.Buffer
	start := time.Now()
	for range n {
		out.Reset()
		tools.Reference{}.Run(context.Background(), t, &out, io.Discard)
		if !bytes.Contains(out.Bytes(), []byte(`"ok":true`)) {
			b.Fatalf("bare exec of %q: %s", command, out.Bytes())
		}
	}
	return time.Since(start) / time.Duration(n)
}
