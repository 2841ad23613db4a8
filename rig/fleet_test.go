package rig

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/report/htmlreport"
)

// TestFleetNamesTheHosts: on a fleet of 5 with one host cut after its
// command started, a wrapper that retries the whole batch fails on every
// host it ran twice, each violation naming its host, and the report, the
// JUnit XML and the HTML page carry each host's verdict. The cut host is
// one of the five, not the first.
func TestFleetNamesTheHosts(t *testing.T) {
	testpeer.Need(t, "parallel-ssh", "ssh")
	t.Parallel()
	cases, err := matrix.Select(matrix.FleetMatrix(), []string{"fleet.started.reset.survive"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out, err := CreateRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, Options{Tool: tools.External{Argv: []string{repoFile(t, "docs/examples/pssh-batch-naive.sh")}}, Cases: cases, Out: out, Hosts: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	checkLogAgrees(t, dir) // each host's verdict too
	if rep.Hosts != 5 || len(rep.Cases) != 1 {
		t.Fatalf("report: %d hosts, %d cases", rep.Hosts, len(rep.Cases))
	}
	c := rep.Cases[0]
	if c.Verdict != report.Fail || len(c.Hosts) != 5 {
		t.Fatalf("case %s: %s with %d hosts, want fail with 5", c.ID, c.Verdict, len(c.Hosts))
	}
	cut := 0
	for i, h := range c.Hosts {
		if h.Cut {
			cut++
			if i == 0 {
				t.Error("the first host is the cut one")
			}
		}
		named := false
		for _, v := range c.Violations {
			named = named || v.Rule == verdict.RuleBlindRetry && strings.HasPrefix(v.Detail, "host "+h.Host+": ")
		}
		if h.Verdict != report.Fail || !named {
			t.Errorf("host %s: %s, named in a blind retry: %v (%s)", h.Host, h.Verdict, named, h.Line())
		}
	}
	if cut != 1 {
		t.Errorf("%d hosts cut, want 1", cut)
	}

	junit, err := rep.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if !bytes.Contains(junit, []byte(`name="host.`+string(rune('0'+i))+`" value="`+c.Hosts[i-1].Host)) {
			t.Errorf("JUnit has no property for host %d (%s)", i, c.Hosts[i-1].Host)
		}
	}
	run, err := htmlreport.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := htmlreport.Write(&page, []*htmlreport.Run{run}); err != nil {
		t.Fatal(err)
	}
	for _, h := range c.Hosts {
		if !strings.Contains(page.String(), h.Line()) {
			t.Errorf("the HTML page lacks host %s's line %q", h.Host, h.Line())
		}
	}
	if !strings.Contains(page.String(), "a fleet of 5 hosts") {
		t.Error("the HTML page does not say the run was on a fleet")
	}
}

// TestReferenceOnAFleet: the reference reaches every host of a fleet at
// once and reports each as its own attempt let it know, so it passes every
// fleet case but kill-helper (it holds its sockets itself: skipped).
func TestReferenceOnAFleet(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Tool: tools.Reference{}, Cases: matrix.FleetMatrix(), Hosts: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		want := report.Pass
		if c.Cut == "kill-helper" {
			want = report.Skipped
		}
		if c.Verdict != want {
			t.Errorf("%s: %s (%s %v), want %s", c.ID, c.Verdict, c.Reason, c.Violations, want)
		}
		if want == report.Pass && len(c.Hosts) != 3 {
			t.Errorf("%s: %d hosts judged, want 3", c.ID, len(c.Hosts))
		}
	}
}
