package htmlreport

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

var screenshot = flag.String("htmlreport.screenshot", "", "also write the browser test's screenshot here (look at it)")

// browser is Debian's chromium (apt-get install chromium), or the test skips.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no headless browser: install Debian's chromium (apt-get install -y chromium) to run the HTML report's browser test")
	return ""
}

// Acceptance 4: the report of three run directories opens in headless
// Chromium with the network off and makes no request at all; it shows
// every case, and a failing case run's timeline shows its cut and its
// violation.
func TestReportInBrowser(t *testing.T) {
	exe := browser(t)
	dirs := threeRuns(t)
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
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1200, 1600), chromedp.UserDataDir(t.TempDir()),
		// Belt and braces: nothing could leave even if the page tried.
		chromedp.ProxyServer("127.0.0.1:9"), chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	requests := make(chan string, 100)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(e.Request.URL, "file://") && !strings.HasPrefix(e.Request.URL, "data:") {
			select {
			case requests <- e.Request.URL:
			default:
			}
		}
	}); err != nil {
		t.Fatalf("browser: %v", err)
	}
	failing := `details.caserun[data-verdict="fail"][open]`
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("browser: %v", err)
	}
	offline := network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}}}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, offline); err != nil {
		t.Fatalf("browser: take the network away: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(`body[data-ready="true"]`),
		chromedp.WaitVisible(failing+` svg`), chromedp.ScrollIntoView(failing)); err != nil {
		t.Fatalf("browser: %v", err)
	}
	eval := func(js string, v any) {
		t.Helper()
		var err error
		switch p := v.(type) {
		case *int:
			*p, err = chromedp.Run(ctx, chromedp.Evaluate[int](js))
		case *string:
			*p, err = chromedp.Run(ctx, chromedp.Evaluate[string](js))
		case *[]string:
			*p, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
		}
		if err != nil {
			t.Fatalf("browser: %s: %v", js, err)
		}
	}
	var rows int
	var cases []string
	var failingSVG, failingText string
	eval(`document.querySelectorAll("#rates tr[data-case]").length`, &rows)
	eval(`[...document.querySelectorAll("#rates tr[data-case]")].map(r => r.dataset.case)`, &cases)
	eval(`document.querySelector('`+failing+` svg').textContent`, &failingSVG)
	eval(`document.querySelector('`+failing+`').textContent`, &failingText)
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("browser: screenshot: %v", err)
	}
	select {
	case u := <-requests:
		t.Fatalf("the page requested %s: it must need nothing but itself", u)
	default:
	}
	want := map[string]bool{}
	for _, r := range runs {
		for _, c := range r.Report.Cases {
			want[c.ID] = true
		}
	}
	if rows != len(want) || len(cases) != len(want) {
		t.Fatalf("rates table shows %d cases, the runs have %d: %v", rows, len(want), cases)
	}
	for _, c := range cases {
		delete(want, c)
	}
	if len(want) > 0 {
		t.Fatalf("cases missing from the page: %v", want)
	}
	for _, s := range []string{"cut: reset at started", "start marker", "verdict: fail (category/unsafe_category)", "tool: succeeded/never"} {
		if !strings.Contains(failingSVG, s) {
			t.Errorf("the failing case run's timeline lacks %q: %s", s, failingSVG)
		}
	}
	if !strings.Contains(failingText, "category/unsafe_category") {
		t.Errorf("the failing case run does not show its violation: %s", failingText)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 600 {
		t.Fatalf("screenshot is %v", b)
	}
	path := *screenshot
	if path == "" {
		path = filepath.Join(t.TempDir(), "report.png")
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes); page %d bytes", path, len(shot), b.Len())
}
