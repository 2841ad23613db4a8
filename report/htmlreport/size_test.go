package htmlreport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
)

// maxPageBytes bounds the page of the default matrix repeated 20 times
// (1620 case runs): 1.5 MB, about 925 bytes a case run. It measured 1.16 MB
// with the summary, filters and links; the bound leaves room for a busier
// log, not for drawing timelines on the server (several kB a case run).
const maxPageBytes = 1_500_000

// TestPageSizeDefaultMatrix20: the page of the default matrix repeated 20
// times stays under maxPageBytes. Running 20 x 81 case runs takes minutes, so the
// run directory is generated: one real repeated run of the whole default
// matrix (one round), its case runs and their event log entries copied into
// 20 rounds, each case run with a correlation id of its own, as a real
// 20-round run records them.
func TestPageSizeDefaultMatrix20(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default matrix")
	}
	t.Parallel() // beside the naive page's browser test
	const rounds = 20
	one := runDir(t, "one", "reference", nil, rig.Repeat{Times: 1, Seed: 20261203})
	dir := filepath.Join(t.TempDir(), "twenty")
	generateRounds(t, one, dir, rounds)
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verified != "" {
		t.Fatalf("the generated log does not verify: %s", r.Verified)
	}
	if n := len(r.Report.Cases); n != rounds*len(matrix.DefaultMatrix()) {
		t.Fatalf("%d case runs generated, want %d", n, rounds*len(matrix.DefaultMatrix()))
	}
	var page bytes.Buffer
	if err := Write(&page, []*Run{r}); err != nil {
		t.Fatal(err)
	}
	t.Logf("default matrix x %d (%d case runs): page %d bytes (%.2f MB), bound %d", rounds, len(r.Report.Cases), page.Len(),
		float64(page.Len())/1e6, maxPageBytes)
	if page.Len() >= maxPageBytes {
		t.Fatalf("the page is %d bytes, not under %d", page.Len(), maxPageBytes)
	}
}

// generateRounds writes into dst a run directory of src's case runs
// repeated rounds times.
func generateRounds(t *testing.T, src, dst string, rounds int) {
	t.Helper()
	rep, err := report.ReadReport(src)
	if err != nil {
		t.Fatal(err)
	}
	entries := readEntries(t, filepath.Join(src, eventlog.FileName))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := eventlog.Create(filepath.Join(dst, eventlog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	cases := rep.Cases
	rep.Cases = nil
	span := time.Duration(rep.Summary.DurationMS) * time.Millisecond
	for k := 1; k <= rounds; k++ {
		shift := time.Duration(k-1) * span
		corr := func(id string) string {
			if id == "" {
				return ""
			}
			return fmt.Sprintf("%s-%02d", id, k)
		}
		for _, e := range entries {
			if k > 1 && e.CorrelationID == "" {
				continue // the run's own entries, once
			}
			e.CorrelationID, e.Time = corr(e.CorrelationID), e.Time.Add(shift)
			if _, err := w.Append(e); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cases {
			d := *c.Draw
			d.Round = k
			c.Draw, c.CorrelationID = &d, corr(c.CorrelationID)
			rep.Cases = append(rep.Cases, c)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep.Repeat.Times = rounds
	rep.Rates = report.Rates(rep.Cases)
	rep.Summary.Cases, rep.Summary.Pass, rep.Summary.Fail = len(rep.Cases), rounds*rep.Summary.Pass, rounds*rep.Summary.Fail
	rep.Summary.Inconclusive, rep.Summary.Skipped = rounds*rep.Summary.Inconclusive, rounds*rep.Summary.Skipped
	rep.Summary.DurationMS *= int64(rounds)
	rep.LogHead = eventlog.FormatHead(w.Head())
	b, err := rep.JSON()
	if err == nil {
		err = os.WriteFile(filepath.Join(dst, report.ReportFile), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func readEntries(t *testing.T, path string) []eventlog.Entry {
	t.Helper()
	var out []eventlog.Entry
	err := eventlog.ReadFile(path, func(_ int, e eventlog.Entry) error {
		e.Seq, e.Prev = 0, "" // appended again to a log of its own
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
