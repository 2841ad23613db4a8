package htmlreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
)

// screenshotsEnv names a directory where the browser tests keep their
// screenshots (CI keeps it as an artefact); without it they go to the
// test's temporary directory. Either way the test logs the paths.
const screenshotsEnv = "SSHRIG_SCREENSHOTS"

// browser is Debian's chromium (apt-get install chromium), or the test skips.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return testpeer.Need(t, "chromium")[0]
}

// pageFile writes the page of the run directories to a file.
func pageFile(t *testing.T, dirs ...string) (string, []*Run) {
	t.Helper()
	var runs []*Run
	for _, d := range dirs {
		r, err := Load(d)
		if err != nil {
			t.Fatal(err)
		}
		if r.Verified != "" {
			t.Fatalf("%s: %s", d, r.Verified)
		}
		runs = append(runs, r)
	}
	var b bytes.Buffer
	if err := Write(&b, runs); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("page %s: %d bytes", file, b.Len())
	return file, runs
}

// tab is a headless Chromium tab, 1400 px wide, with no network at all:
// the page must need nothing but itself. requests receives any request
// it tries anyway.
type tab struct {
	t        *testing.T
	ctx      context.Context
	requests chan string
	shots    string
}

func newTab(t *testing.T) *tab {
	t.Helper()
	exe := browser(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1400, 900), chromedp.UserDataDir(t.TempDir()),
		// Belt and braces: nothing could leave even if the page tried.
		chromedp.ProxyServer("127.0.0.1:9"), chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	b := &tab{t: t, ctx: ctx, requests: make(chan string, 100), shots: os.Getenv(screenshotsEnv)}
	if b.shots == "" {
		b.shots = t.TempDir()
	}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(e.Request.URL, "file://") && !strings.HasPrefix(e.Request.URL, "data:") {
			select {
			case b.requests <- e.Request.URL:
			default:
			}
		}
	}); err != nil {
		t.Fatalf("browser: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("browser: %v", err)
	}
	offline := network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}}}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, offline); err != nil {
		t.Fatalf("browser: take the network away: %v", err)
	}
	return b
}

func (b *tab) open(file string) {
	b.t.Helper()
	b.run(chromedp.EmulateViewport(1400, 900), chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
}

func (b *tab) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval runs js in the page and decodes its value into v (nil: no value).
func (b *tab) eval(js string, v any) {
	b.t.Helper()
	if v == nil {
		if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
			b.t.Fatalf("browser: %s: %v", js, err)
		}
		return
	}
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]byte](js))
	if err == nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		b.t.Fatalf("browser: %s: %v", js, err)
	}
}

// screenshot keeps what the window shows, 1400 px wide, as name.png.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	shot, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("browser: screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if r := img.Bounds(); r.Dx() != 1400 {
		b.t.Fatalf("screenshot %s is %v, want 1400 px wide", name, r)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s (%d bytes)", path, len(shot))
}

// noRequests fails the test if the page asked for anything.
func (b *tab) noRequests() {
	b.t.Helper()
	select {
	case u := <-b.requests:
		b.t.Fatalf("the page requested %s: it must need nothing but itself", u)
	default:
	}
}

// overlapsJS lists every pair of timeline labels in one lane whose boxes
// (the DOM's, as drawn) intersect, and every label outside its drawing.
const overlapsJS = `(() => {
  const out = [];
  let labels = 0;
  for (const svg of document.querySelectorAll("svg.tl")) {
    const s = svg.getBoundingClientRect();
    const lanes = {};
    for (const t of svg.querySelectorAll("text.lbl")) {
      labels++;
      const r = t.getBoundingClientRect();
      if (r.left < s.left - 0.5 || r.right > s.right + 0.5) out.push("outside its timeline: " + t.textContent);
      (lanes[t.dataset.lane] = lanes[t.dataset.lane] || []).push([t.textContent, r]);
    }
    for (const k in lanes) {
      const ls = lanes[k];
      for (let i = 0; i < ls.length; i++) for (let j = i + 1; j < ls.length; j++) {
        const [a, ra] = ls[i], [b, rb] = ls[j];
        if (ra.left < rb.right - 0.5 && rb.left < ra.right - 0.5 && ra.top < rb.bottom - 0.5 && rb.top < ra.bottom - 0.5)
          out.push("lane " + k + ": \"" + a + "\" overlaps \"" + b + "\"");
      }
    }
  }
  return {timelines: document.querySelectorAll("svg.tl").length, labels, overlaps: out};
})()`

type overlapReport struct {
	Timelines, Labels int
	Overlaps          []string
}

// Acceptance 3: the page of a naive tool's run (every case of the default
// matrix, mutant:error-is-confirmed-failure), in headless Chromium at
// 1400 px: the summary grid shows without scrolling; a click on a failing
// cell shows that case's timeline; a filter to one rule hides the rest; no
// two labels in a lane overlap, measured from the DOM's boxes. The page
// makes no request at all.
func TestNaiveToolPageInBrowser(t *testing.T) {
	browser(t)
	t.Parallel() // its run and browser mostly wait; beside the page-size test
	dir := runDir(t, "naive", "mutant:error-is-confirmed-failure", nil, rig.Repeat{})
	file, runs := pageFile(t, dir)
	rep := runs[0].Report
	b := newTab(t)
	b.open(file)
	b.screenshot("summary")

	// The summary: every grid inside the first screen.
	var fit struct {
		Grids    int
		Outside  []string
		ScrollY  float64
		Viewport []float64
	}
	b.eval(`(() => {
  const out = [];
  const gs = document.querySelectorAll("table.grid");
  for (const g of gs) {
    const r = g.getBoundingClientRect();
    if (r.bottom > innerHeight || r.right > innerWidth || r.top < 0) out.push(g.dataset.disposition + " at " + JSON.stringify(r));
  }
  return {grids: gs.length, outside: out, scrollY: scrollY, viewport: [innerWidth, innerHeight]};
})()`, &fit)
	disps := map[string]bool{}
	for _, c := range rep.Cases {
		disps[c.Disposition] = true
	}
	if fit.Grids != len(disps) || len(fit.Outside) > 0 || fit.ScrollY != 0 {
		t.Fatalf("summary grids: %d (want one per disposition, %d), outside the first screen %v of %v, scrolled %v",
			fit.Grids, len(disps), fit.Outside, fit.Viewport, fit.ScrollY)
	}
	var chips int
	b.eval(`document.querySelectorAll("table.grid a.chip").length`, &chips)
	if chips != len(rep.Cases) {
		t.Fatalf("the grids show %d cases, the run has %d", chips, len(rep.Cases))
	}

	// A click on a failing cell: that case opens, its timeline in view.
	// A failing case with a cut, if there is one, has the most to show.
	var failing string
	b.eval(`(document.querySelector("table.grid a.chip[data-case='started.reset.survive'] .seg.fail") || document.querySelector("table.grid a.chip .seg.fail")).parentElement.dataset.case`, &failing)
	var want report.CaseReport
	for _, c := range rep.Cases {
		if c.ID == failing {
			want = c
		}
	}
	if want.Verdict != report.Fail {
		t.Fatalf("the grid shows %q as failing; the report says %q", failing, want.Verdict)
	}
	section := fmt.Sprintf(`details.case[id="case-%s"]`, failing)
	b.run(chromedp.Click(chromedp.CSS(fmt.Sprintf(`table.grid a.chip[data-case="%s"]`, failing))), chromedp.WaitVisible(chromedp.CSS(section+` details.caserun svg.tl`)))
	var shown struct {
		Top, Bottom, Height float64
		Text, Hash          string
	}
	b.eval(`(() => { const s = document.querySelector('`+section+` svg.tl'), r = s.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, height: innerHeight, text: s.textContent, hash: location.hash}; })()`, &shown)
	if shown.Top < 0 || shown.Top >= shown.Height {
		t.Errorf("after the click, %s's timeline is at %v..%v, outside the window (0..%v)", failing, shown.Top, shown.Bottom, shown.Height)
	}
	if shown.Hash != "#case-"+failing {
		t.Errorf("after the click the address ends %q, want #case-%s", shown.Hash, failing)
	}
	for _, s := range []string{"verdict: fail", "tool: " + reported(want)} {
		if !strings.Contains(shown.Text, s) {
			t.Errorf("%s's timeline lacks %q: %s", failing, s, shown.Text)
		}
	}
	if want.Cut != "" && !strings.Contains(shown.Text, "cut: "+want.Cut) {
		t.Errorf("%s's timeline lacks its cut %q: %s", failing, want.Cut, shown.Text)
	}
	b.screenshot("timeline")

	// Every failing case's timelines drawn: no two labels in a lane meet.
	var ov overlapReport
	b.eval(`for (const s of document.querySelectorAll("details.case.fail")) { s.open = true; renderCase(s); }`, nil)
	b.eval(overlapsJS, &ov)
	if ov.Timelines < rep.Summary.Fail || ov.Labels < 5*ov.Timelines {
		t.Fatalf("%d timelines with %d labels drawn, want one per failing case run (%d), each with its labels", ov.Timelines, ov.Labels, rep.Summary.Fail)
	}
	if len(ov.Overlaps) > 0 {
		t.Errorf("%d overlapping labels in %d timelines: %s", len(ov.Overlaps), ov.Timelines, strings.Join(ov.Overlaps, "; "))
	}
	t.Logf("%d timelines, %d labels, none overlapping", ov.Timelines, ov.Labels)

	// A filter to one rule, by a click on it in the table of rules: the
	// cases that broke it stay, every other case hides, in the grid too.
	rule := "evidence/contradiction"
	broke := map[string]bool{}
	for _, c := range rep.Cases {
		for _, v := range c.Violations {
			if v.Assertion+"/"+v.Rule == rule {
				broke[c.ID] = true
			}
		}
	}
	if len(broke) == 0 || len(broke) == len(rep.Cases) {
		t.Fatalf("%d of %d cases broke %s: the filter would show nothing", len(broke), len(rep.Cases), rule)
	}
	b.run(chromedp.Click(chromedp.CSS(`a.rulefilter[data-rule="` + rule + `"]`)))
	var filtered struct {
		Rows, Sections, Chips []string
		Select, Count         string
	}
	b.eval(`(() => {
  const vis = sel => [...document.querySelectorAll(sel)].filter(e => e.offsetParent !== null).map(e => e.dataset.case || e.id.slice(5));
  return {rows: vis("#cases tr.case-row"), sections: vis("details.case"),
    chips: [...document.querySelectorAll("a.chip:not(.dim)")].map(a => a.dataset.case),
    select: document.getElementById("f-rule").value, count: document.getElementById("f-count").textContent};
})()`, &filtered)
	for name, shown := range map[string][]string{"table rows": filtered.Rows, "case sections": filtered.Sections, "grid cells": filtered.Chips} {
		if len(shown) != len(broke) {
			t.Errorf("filtered to %s, %d %s show, want the %d cases that broke it: %v", rule, len(shown), name, len(broke), shown)
		}
		for _, id := range shown {
			if !broke[id] {
				t.Errorf("filtered to %s, %s shows %s, which did not break it", rule, name, id)
			}
		}
	}
	if filtered.Select != rule || filtered.Count != fmt.Sprintf("%d of %d cases", len(broke), len(rep.Cases)) {
		t.Errorf("the rule filter reads %q, the count %q", filtered.Select, filtered.Count)
	}
	b.screenshot("filtered-by-rule")

	// The search box narrows further; clear brings every case back.
	b.run(chromedp.Click(chromedp.CSS(`#f-clear`)), chromedp.SendKeys(chromedp.CSS(`#f-search`), "c02."))
	var rows []string
	b.eval(`[...document.querySelectorAll("#cases tr.case-row")].filter(e => !e.hidden).map(e => e.dataset.case)`, &rows)
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "c02.") || !strings.HasPrefix(rows[1], "c02.") {
		t.Errorf("searching for c02. shows %v, want the two c02 cases", rows)
	}
	b.noRequests()
}

// Several runs side by side: each column is headed by its tool, target and
// seed; the tool filter keeps one run's column; a repeated run's cells
// carry the failure rate with its interval explained.
func TestRunsSideBySideInBrowser(t *testing.T) {
	browser(t)
	globs := []string{"none.*", "started.reset.*", "exit-status.close.*"}
	dirs := []string{
		runDir(t, "night1", "reference", globs, rig.Repeat{}),
		runDir(t, "night2", "mutant:sometimes-lost-status-is-success", globs, rig.Repeat{Times: 8, Seed: 7}),
	}
	file, runs := pageFile(t, dirs...)
	b := newTab(t)
	b.open(file)
	var heads []string
	b.eval(`[...document.querySelectorAll("#cases th.runhead")].map(th => th.textContent)`, &heads)
	if len(heads) != 2 {
		t.Fatalf("run columns: %q", heads)
	}
	for i, r := range runs {
		want := []string{r.Report.Tool, r.Report.Target, r.Name}
		if r.Report.Repeat != nil {
			want = append(want, fmt.Sprintf("seed %d", r.Report.Repeat.Seed))
		}
		for _, w := range want {
			if !strings.Contains(heads[i], w) {
				t.Errorf("column %d is headed %q, lacking %q", i, heads[i], w)
			}
		}
	}
	var legend string
	b.eval(`document.querySelector("#summary .legend").textContent`, &legend)
	if !strings.Contains(legend, "Wilson") {
		t.Errorf("a repeated run's page does not explain the interval: %s", legend)
	}
	b.screenshot("two-runs")

	// The flaky case's timelines: open its section and check the labels.
	var flaky string
	b.eval(`(document.querySelector("#cases tr.case-row td .tag.flaky, #cases tr.case-row td .tag.fail") || {closest: () => ({dataset: {}})}).closest("tr").dataset.case || ""`, &flaky)
	if flaky == "" {
		t.Fatal("the repeated flaky mutant's run shows no failing case")
	}
	b.run(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#cases tr.case-row[data-case="%s"] a`, flaky))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`details.case[id="case-%s"] svg.tl`, flaky))))
	var ov overlapReport
	b.eval(overlapsJS, &ov)
	if ov.Timelines == 0 || len(ov.Overlaps) > 0 {
		t.Errorf("%d timelines; overlapping labels: %v", ov.Timelines, ov.Overlaps)
	}
	b.screenshot("two-runs-timeline")

	// The tool filter: only the reference tool's column and case runs.
	b.eval(`(() => { const e = document.getElementById("f-tool"); e.value = "reference"; e.dispatchEvent(new Event("input")); })()`, nil)
	var cols []bool
	b.eval(`[...document.querySelectorAll("#cases th.runhead")].map(th => th.hidden)`, &cols)
	if len(cols) != 2 || cols[0] || !cols[1] {
		t.Errorf("filtered to the reference tool, the run columns hidden are %v, want [false true]", cols)
	}
	var otherRuns int
	b.eval(`[...document.querySelectorAll("details.caserun")].filter(d => !d.hidden && d.dataset.run !== "0").length`, &otherRuns)
	if otherRuns != 0 {
		t.Errorf("filtered to the reference tool, %d case runs of the other tool still show", otherRuns)
	}
	b.noRequests()
}

// The page marks a pass that claims less than could be known as a
// conservative pass, in its table, its grid's legend and its counts.
func TestConservativePassShown(t *testing.T) {
	dir := runDir(t, "ref", "reference", []string{"none.*", "started.reset.survive"}, rig.Repeat{})
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, c := range r.Report.Cases {
		if c.Verdict == report.Pass && n == 0 {
			r.Report.Cases[i].Grade = report.Conservative
			n++
		}
	}
	if n == 0 {
		t.Fatal("the reference tool passed nothing")
	}
	p := build([]*Run{r})
	var conservative []string
	for _, c := range p.Cases {
		if c.Status == "conservative" {
			conservative = append(conservative, c.ID)
		}
	}
	if len(conservative) != 1 {
		t.Fatalf("cases shown as conservative passes: %v, want one", conservative)
	}
	var out bytes.Buffer
	if err := Write(&out, []*Run{r}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `<span class="tag conservative" style="">pass (conservative)</span>`) {
		t.Errorf("the page does not show the conservative pass as such")
	}
	js, _ := json.Marshal(p.Counts)
	if !strings.Contains(string(js), `"Verdict":"conservative","Label":"pass (conservative)","N":1`) {
		t.Errorf("counts: %s", js)
	}
}
