package containers_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/target"
	"github.com/sshrig/sshrig/tool"
)

func selectCases(t testing.TB, globs []string) []matrix.Case {
	t.Helper()
	cases, err := matrix.Select(matrix.DefaultMatrix(), globs)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

func runRig(t testing.TB, o rig.Options) (*report.Report, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := rig.Run(ctx, o)
	if err != nil {
		t.Fatalf("run on %s: %v", o.Target.Name(), err)
	}
	return rep, time.Since(start)
}

// noContainersOf fails when anything labelled with l's run id remains.
func noContainersOf(t testing.TB, l *containers.Launcher) {
	t.Helper()
	if left := containers.RigContainers(t, containers.LabelRun+"="+l.ID()); len(left) > 0 {
		t.Errorf("containers of run %s left behind: %v", l.ID(), left)
	}
}

// Acceptance 1: the whole default matrix with the reference tool passes on
// the container target, and every case gets the same verdict and truth as
// on embedded. The two whole-matrix times are measured here, in one run.
func TestMatrixSameAsEmbedded(t *testing.T) {
	containers.NeedDocker(t)
	l := containers.NewLauncher(t)
	if _, err := l.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	cases := matrix.DefaultMatrix()
	onContainer, dc := runRig(t, rig.Options{Tool: tools.Reference{}, Cases: cases, Target: rig.Container(l)})
	noContainersOf(t, l) // acceptance 3: after a normal run
	onEmbedded, de := runRig(t, rig.Options{Tool: tools.Reference{}, Cases: cases})
	t.Logf("whole matrix (%d cases, --parallel 2, reference): container %.1fs, embedded %.1fs", len(cases), dc.Seconds(), de.Seconds())
	t.Logf("container: %s", onContainer.SummaryLine())
	t.Logf("embedded:  %s", onEmbedded.SummaryLine())
	if !strings.HasPrefix(onContainer.Where, "container ") {
		t.Errorf("report says the server ran in %q", onContainer.Where)
	}
	if s := onContainer.Summary; s.Pass != s.Executed() || s.Executed() == 0 {
		t.Errorf("container: %s", onContainer.SummaryLine())
	}
	for i, c := range onContainer.Cases {
		e := onEmbedded.Cases[i]
		if c.ID != e.ID {
			t.Fatalf("case %d: %s on container, %s on embedded", i, c.ID, e.ID)
		}
		if c.Verdict != report.Pass && c.Verdict != report.Skipped {
			t.Errorf("%s on container: %s %v %s", c.ID, c.Verdict, c.Violations, c.Reason)
		}
		if c.Verdict != e.Verdict {
			t.Errorf("%s: verdict %s on container, %s on embedded", c.ID, c.Verdict, e.Verdict)
		}
		if truth(c) != truth(e) {
			t.Errorf("%s: truth %s on container, %s on embedded", c.ID, truth(c), truth(e))
		}
		if c.Truth != nil && c.Truth.Disagreement != "" {
			t.Errorf("%s: the ledger over SSH and the one read in the container disagree: %s", c.ID, c.Truth.Disagreement)
		}
	}
}

func truth(c report.CaseReport) string {
	if c.Truth == nil {
		return "none"
	}
	s := string(c.Truth.State)
	if c.Truth.ExitCode != nil {
		s += "(" + strconv.Itoa(*c.Truth.ExitCode) + ")"
	}
	return s
}

// Acceptance 2: every mutant is caught on the container target too, by the
// assertion that must catch it. Acceptance 3: each failed run leaves no
// container behind.
func TestMutantsCaught(t *testing.T) {
	containers.NeedDocker(t)
	cases := selectCases(t, matrix.MutantCases())
	for _, m := range tools.Mutants() {
		t.Run(m.Name(), func(t *testing.T) {
			t.Parallel()
			l := containers.NewLauncher(t)
			rep, _ := runRig(t, rig.Options{Tool: m, Cases: cases, Target: rig.Container(l)})
			noContainersOf(t, l)
			if rep.Summary.Fail == 0 {
				t.Fatalf("%s passed on the container target: %s", m.Name(), rep.SummaryLine())
			}
			for _, c := range rep.Cases {
				for _, v := range c.Violations {
					if v.Assertion == m.Catches() {
						return
					}
				}
			}
			t.Fatalf("%s not caught by %s on the container target: %s", m.Name(), m.Catches(), rep.SummaryLine())
		})
	}
}

// A container that dies mid-run makes the cases from then on inconclusive,
// with the container's state and last log lines in their reason; the run
// still ends with a report, and the dead container is removed.
func TestContainerDiesMidRun(t *testing.T) {
	containers.NeedDocker(t)
	l := containers.NewLauncher(t)
	cli := containers.TestClient(t)
	killer := &killTool{inner: tools.Reference{}, n: 3, kill: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: containers.LabelFilter(containers.LabelRun + "=" + l.ID())})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("the run's container: %v, %d found", err, len(list.Items))
			return
		}
		if _, err := cli.ContainerKill(ctx, list.Items[0].ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			t.Errorf("docker kill: %v", err)
		}
	}}
	dir, err := rig.CreateRunDir(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	cases := selectCases(t, []string{"none.exit0", "started.reset.survive", "exec.close.hangup", "none.exit3"})
	rep, _ := runRig(t, rig.Options{Tool: killer, Cases: cases, Parallel: 1, Target: rig.Container(l), Out: dir})
	b, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.WriteFile("report.json", b); err != nil {
		t.Fatal(err)
	}
	if err := dir.Close(); err != nil {
		t.Fatal(err)
	}
	noContainersOf(t, l)
	t.Log(rep.SummaryLine())
	t.Logf("%s: %s", rep.Cases[len(rep.Cases)-1].ID, rep.Cases[len(rep.Cases)-1].Reason)
	if rep.Cases[0].Verdict != report.Pass {
		t.Errorf("%s, before the kill: %s %s", rep.Cases[0].ID, rep.Cases[0].Verdict, rep.Cases[0].Reason)
	}
	for _, c := range rep.Cases[1:] {
		if c.Verdict != report.Inconclusive {
			t.Errorf("%s, after the kill: %s, want inconclusive", c.ID, c.Verdict)
			continue
		}
		for _, want := range []string{"the server is gone", "exit code 137", "its last log lines", `"ledger":"/scratch/ledger"`} {
			if !strings.Contains(c.Reason, want) {
				t.Errorf("%s: reason %q lacks %q", c.ID, c.Reason, want)
			}
		}
	}
	var doc struct {
		Cases []struct {
			Verdict string `json:"verdict"`
			Reason  string `json:"reason"`
		} `json:"cases"`
	}
	saved, err := os.ReadFile(filepath.Join(dir.Path, "report.json"))
	if err != nil || json.Unmarshal(saved, &doc) != nil || len(doc.Cases) != len(cases) {
		t.Fatalf("report.json: %v, %d cases", err, len(doc.Cases))
	}
	if !strings.Contains(doc.Cases[len(cases)-1].Reason, "the server is gone") {
		t.Errorf("report.json does not say the server is gone: %q", doc.Cases[len(cases)-1].Reason)
	}
}

// killTool runs the inner tool, but first kills the server's container when
// the rig invokes the tool for the nth time (the preflight is the first).
type killTool struct {
	inner tool.Tool
	n     int32
	calls atomic.Int32
	kill  func()
}

func (k *killTool) Name() string { return k.inner.Name() }

func (k *killTool) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	if k.calls.Add(1) == k.n {
		k.kill()
	}
	k.inner.Run(ctx, t, stdout, stderr)
}

// Least privilege: no host mounts, not privileged, every capability
// dropped, no new privileges, read-only root, an unprivileged user, and
// exactly the SSH and control ports published, on 127.0.0.1 only. Checked on
// the running container and, from the inside, on the server process.
func TestLeastPrivilege(t *testing.T) {
	containers.NeedDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := containers.NewLauncher(t)
	ep, err := l.Launch(ctx, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Stop()
	checkEndpoint(t, ep)
	cli := containers.TestClient(t)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: containers.LabelFilter(containers.LabelRun + "=" + l.ID())})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the container: %v, %d found", err, len(list.Items))
	}
	res, err := cli.ContainerInspect(ctx, list.Items[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Container
	h := c.HostConfig
	if h.Privileged {
		t.Error("privileged")
	}
	// CAP_SYS_ADMIN only opens Docker's seccomp profile to the user and
	// mount namespaces of each case's host: the server runs as nobody.
	if len(h.CapDrop) != 1 || h.CapDrop[0] != "ALL" || len(h.CapAdd) != 1 || strings.TrimPrefix(h.CapAdd[0], "CAP_") != "SYS_ADMIN" {
		t.Errorf("capabilities: drop %v, add %v; want drop [ALL], add [CAP_SYS_ADMIN]", h.CapDrop, h.CapAdd)
	}
	if !strings.Contains(strings.Join(h.SecurityOpt, ","), "no-new-privileges") {
		t.Errorf("security options %v lack no-new-privileges", h.SecurityOpt)
	}
	if !h.ReadonlyRootfs {
		t.Error("root file system is writable")
	}
	if h.Init == nil || !*h.Init {
		t.Error("no init process")
	}
	if c.Config.User != containers.User {
		t.Errorf("user %q, want %q", c.Config.User, containers.User)
	}
	if len(h.Binds) > 0 || len(h.Mounts) > 0 || len(h.VolumesFrom) > 0 {
		t.Errorf("host mounts: binds %v, mounts %v, volumes-from %v", h.Binds, h.Mounts, h.VolumesFrom)
	}
	for _, m := range c.Mounts {
		if m.Type != "tmpfs" {
			t.Errorf("mount %s from %s (%s): only tmpfs is allowed", m.Destination, m.Source, m.Type)
		}
	}
	for _, p := range []string{"/scratch", "/tmp"} {
		if _, ok := h.Tmpfs[p]; !ok {
			t.Errorf("%s is not a tmpfs: %v", p, h.Tmpfs)
		}
	}
	if h.PublishAllPorts || h.NetworkMode == "host" {
		t.Errorf("publish all %v, network mode %s", h.PublishAllPorts, h.NetworkMode)
	}
	containers.CheckPublished(t, c)

	// From the inside: the server (the ready line's pid) has no capability,
	// cannot gain any, and is not root. Its bounding set keeps
	// CAP_SYS_ADMIN (bit 21) for the commands' own user namespaces only.
	var pid string
	for _, line := range strings.Split(ep.Logs(), "\n") {
		var r struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.PID > 0 {
			pid = strconv.Itoa(r.PID)
		}
	}
	if pid == "" {
		t.Fatalf("no ready line in the logs: %q", ep.Logs())
	}
	status, err := containers.ReadFile(ctx, cli, c.ID, "/proc/"+pid+"/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000200000", "NoNewPrivs:\t1", "Uid:\t65534\t65534\t65534\t65534"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("server process (pid %s) status lacks %q:\n%s", pid, want, status)
		}
	}
	if err := ep.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive, why := ep.Alive(ctx); alive || !strings.Contains(why, "no longer exists") {
		t.Errorf("after Stop: alive %v, %q", alive, why)
	}
	noContainersOf(t, l)
}

// checkEndpoint: every field of the Endpoint is set, and the addresses are
// on loopback.
func checkEndpoint(t *testing.T, ep *target.Endpoint) {
	t.Helper()
	if !strings.HasPrefix(ep.SSHAddr, "127.0.0.1:") || !strings.HasPrefix(ep.ControlAddr, "127.0.0.1:") {
		t.Errorf("addresses %s, %s: want 127.0.0.1", ep.SSHAddr, ep.ControlAddr)
	}
	if !strings.HasPrefix(ep.Where, "container ") || !strings.Contains(ep.Where, "(image "+containers.ImageRepo+":") {
		t.Errorf("where %q", ep.Where)
	}
	if ep.Stop == nil || ep.Logs == nil || ep.ReadLedger == nil || ep.Alive == nil {
		t.Fatalf("endpoint with unset fields: %+v", ep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if alive, why := ep.Alive(ctx); !alive {
		t.Errorf("not alive: %s", why)
	}
	if _, err := ep.ReadLedger(ctx); err != nil {
		t.Errorf("ledger: %v", err)
	}
}
