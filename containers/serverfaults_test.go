package containers_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
)

// The far side's faults on the container target: the reference passes every
// case with the same truth as on embedded, and the reconciling wrapper looks
// once the rebooted host is back and says what it found there.
func TestServerFaultsSameAsEmbedded(t *testing.T) {
	containers.NeedDocker(t)
	l := containers.NewLauncher(t)
	if _, err := l.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	cases := matrix.ServerMatrix()
	onContainer, dc := runRig(t, rig.Options{Tool: tools.Reference{}, Cases: cases, Target: rig.Container(l)})
	onEmbedded, de := runRig(t, rig.Options{Tool: tools.Reference{}, Cases: cases})
	t.Logf("server matrix (%d cases, reference): container %.1fs, embedded %.1fs", len(cases), dc.Seconds(), de.Seconds())
	if s := onContainer.Summary; s.Pass != len(cases) {
		t.Errorf("container: %s", onContainer.SummaryLine())
	}
	for i, c := range onContainer.Cases {
		e := onEmbedded.Cases[i]
		if c.Verdict != report.Pass {
			t.Errorf("%s on container: %s %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
		}
		if truth(c) != truth(e) {
			t.Errorf("%s: truth %s on container, %s on embedded", c.ID, truth(c), truth(e))
		}
	}

	testpeer.Need(t, "ssh")
	script, err := filepath.Abs("../docs/examples/ssh-reconcile-honest.sh")
	if err != nil {
		t.Fatal(err)
	}
	reboots, err := matrix.Select(cases, []string{"reboot.*"})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := runRig(t, rig.Options{Tool: tools.External{Argv: []string{script}}, Cases: reboots, Target: rig.Container(l)})
	t.Log(rep.SummaryLine())
	if rep.Summary.Pass != len(reboots) {
		t.Errorf("ssh-reconcile-honest.sh on container: %s", rep.SummaryLine())
		for _, c := range rep.Cases {
			if c.Verdict != report.Pass {
				t.Logf("%s %s: %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
			}
		}
	}
	for _, c := range rep.Cases {
		if c.ID == "reboot.finished" && (c.Reported == nil || !strings.Contains(c.Reported.Message, "reconcile probe says completed")) {
			t.Errorf("ssh-reconcile-honest.sh at reboot.finished on container: %+v, want the probe's answer completed", c.Reported)
		}
	}
	noContainersOf(t, l)
}
