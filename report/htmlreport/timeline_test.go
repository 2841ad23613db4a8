package htmlreport

import (
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/report"
)

// A case run whose decision the run amended (an ambiguous report, a
// confirmation alone) logs two verdict events; its timeline draws only the
// last, the one report.json carries.
func TestTimelineDrawsTheFinalVerdict(t *testing.T) {
	t0 := time.Unix(1, 0)
	evs := []event{
		{Time: t0, Source: "rig", Event: "verdict", Data: map[string]any{"verdict": "pass"}},
		{Time: t0.Add(time.Millisecond), Source: "rig", Event: "verdict", Data: map[string]any{"verdict": "fail",
			"violations": []any{map[string]any{"assertion": "category", "rule": "ambiguous_report", "detail": "…"}}}},
	}
	labels := &labelTab{idx: map[string]int{}}
	tl := drawCase(report.CaseReport{Verdict: report.Fail}, evs, labels)
	var drawn []string
	for _, p := range tl.Points {
		if l := labels.list[p[2]]; strings.HasPrefix(l, "verdict: ") {
			drawn = append(drawn, l)
		}
	}
	if len(drawn) != 1 || drawn[0] != "verdict: fail (category/ambiguous_report)" {
		t.Errorf("verdict labels drawn: %q, want only the final decision", drawn)
	}
}

// A run on the kernel network says so where the page names its target.
func TestKernelNetworkNamed(t *testing.T) {
	r := &Run{Name: "k", Report: &report.Report{Tool: "reference", Target: "embedded", Net: "kernel"}}
	p := build([]*Run{r})
	if len(p.Runs) != 1 || p.Runs[0].Target != "embedded, kernel network" {
		t.Fatalf("runs %+v", p.Runs)
	}
	r.Report.Net = "proxy"
	if p := build([]*Run{r}); p.Runs[0].Target != "embedded" {
		t.Fatalf("proxy run named %q", p.Runs[0].Target)
	}
}

// A step case that cut an upload shows, in its case run, what the cut left
// on the host: the file, the bytes that arrived, its size and hash there.
func TestCutUploadShown(t *testing.T) {
	up := &report.Upload{Path: "/home/u/job.sh", Arrived: 64, Size: 64, SHA256: "9f2c"}
	r := &Run{Name: "u", Report: &report.Report{Tool: "exec:x", Target: "embedded", Cases: []report.CaseReport{
		{ID: "step.upload-64B.reset", Verdict: report.Fail, Upload: up,
			Violations: []report.Violation{{Assertion: report.AssertEvidence, Rule: "partial_upload_claimed", Detail: "…"}}},
		{ID: "exec.reset.survive", Verdict: report.Pass},
	}}}
	var b strings.Builder
	if err := Write(&b, []*Run{r}); err != nil {
		t.Fatal(err)
	}
	want := "cut upload: /home/u/job.sh: 64 of its bytes arrived; on the host 64 bytes, sha256 9f2c"
	if n := strings.Count(b.String(), "cut upload: "); n != 1 || !strings.Contains(b.String(), want) {
		t.Errorf("the page shows %d cut uploads; want one: %q", n, want)
	}
}

// A case of the far side's faults draws what the server did: the fault at
// the hold, and the exit status it withheld.
func TestServerFaultDrawn(t *testing.T) {
	t0 := time.Unix(1, 0)
	evs := []event{
		{Time: t0, Source: "server", Event: "server_fault", Data: map[string]any{"detail": "no-exit-status: the held session's exit status will be withheld"}},
		{Time: t0.Add(time.Millisecond), Source: "server", Event: "exit_withheld", Data: map[string]any{"detail": "EOF and close, no exit status"}},
	}
	labels := &labelTab{idx: map[string]int{}}
	tl := drawCase(report.CaseReport{Verdict: report.Pass}, evs, labels)
	var drawn []string
	for _, p := range tl.Points {
		drawn = append(drawn, labels.list[p[2]])
	}
	want := []string{"server fault: no-exit-status: the held session's exit status will be withheld", "exit status withheld: EOF and close, no exit status"}
	for _, w := range want {
		if !strings.Contains(strings.Join(drawn, "\n"), w) {
			t.Errorf("drawn %q, want %q among them", drawn, w)
		}
	}
}
