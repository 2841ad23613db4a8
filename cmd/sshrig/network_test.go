package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sshrig/sshrig/internal/kernelnet"
	"github.com/sshrig/sshrig/internal/procs"
	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/matrix"
)

// requireKernel skips where this process may not make the kernel network,
// and fails instead under SSHRIG_REQUIRE_NETNS=1 (as in CI).
func requireKernel(t *testing.T) {
	t.Helper()
	if err := kernelnet.Check(); err != nil {
		if os.Getenv("SSHRIG_REQUIRE_NETNS") == "1" {
			t.Fatalf("SSHRIG_REQUIRE_NETNS=1 but: %v", err)
		}
		t.Skipf("no kernel network here: %v", err)
	}
}

// TestKeepaliveSideBySide is docs/network.md's measurement: three clients
// whose only liveness check is TCP's own, at started.blackhole.survive,
// behind the proxy and on the kernel network, in one run. Behind the proxy
// every one hangs: the proxy's kernel acknowledges everything. On the
// kernel network the tool's kernel meets the blackhole itself; only a
// socket with TCP_USER_TIMEOUT gives up on the EOF it cannot deliver, and
// reports outcome_unknown within its budget. Keepalive alone never fires
// (the first probe waits 7200 s, and none is sent while data waits for an
// acknowledgement).
func TestKeepaliveSideBySide(t *testing.T) {
	requireKernel(t)
	bin := buildExample(t, "tcpkeepalive-go")
	clients := []struct {
		name, tool string
		// kernelPasses: on the kernel network the tool gives up in time.
		kernelPasses bool
	}{
		{"x/crypto/ssh, TCP keepalive 1s/1s/2", "exec:" + bin, false},
		{"x/crypto/ssh, TCP keepalive and TCP_USER_TIMEOUT 3s", "exec:" + bin + " -user-timeout 3s", true},
		{"OpenSSH, TCPKeepAlive yes, no ServerAlive", "exec:../../docs/examples/ssh-tcpkeepalive.sh", false},
	}
	type row struct{ verdict, reported, toolMS string }
	var mu sync.Mutex
	got := map[string]row{}
	t.Run("runs", func(t *testing.T) {
		for _, c := range clients {
			for _, net := range []string{"proxy", "kernel"} {
				t.Run(net+"/"+c.name, func(t *testing.T) {
					t.Parallel()
					// A process per run, as users run it: runs of one
					// process would count as each other's load and
					// have every hang confirmed alone, one after another.
					dir := t.TempDir()
					cmd := exec.Command(os.Args[0], "run", "--tool", c.tool, "--net", net, "--budget", "10s",
						"--cases", "started.blackhole.survive", "--out", dir, "-q")
					cmd.Env = append(os.Environ(), testMainEnv+"=1")
					out, err := cmd.CombinedOutput()
					stderr := string(out)
					var rep map[string]any
					if b, rerr := os.ReadFile(filepath.Join(dir, "report.json")); rerr == nil {
						json.Unmarshal(b, &rep)
					}
					cases, _ := rep["cases"].([]any)
					if len(cases) != 1 {
						t.Fatalf("%v, no case run:\n%s", err, stderr)
					}
					cr := cases[0].(map[string]any)
					r := row{verdict: fmt.Sprint(cr["verdict"]), toolMS: fmt.Sprint(cr["tool_ms"])}
					if rp, ok := cr["reported"].(map[string]any); ok {
						r.reported = fmt.Sprintf("%v/%v", rp["category"], rp["retry"])
					}
					mu.Lock()
					got[net+"/"+c.name] = r
					mu.Unlock()
					wantPass := net == "kernel" && c.kernelPasses
					if (r.verdict == "pass") != wantPass {
						t.Errorf("verdict %s (%v), want pass=%v:\n%s", r.verdict, caseRules(rep)["started.blackhole.survive"], wantPass, stderr)
					}
					if !wantPass && !has(caseRules(rep)["started.blackhole.survive"], "hang") {
						t.Errorf("rules %v, want a hang", caseRules(rep)["started.blackhole.survive"])
					}
					if wantPass && r.reported != "outcome_unknown/reconcile_first" {
						t.Errorf("reported %s, want outcome_unknown/reconcile_first", r.reported)
					}
				})
			}
		}
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%-52s %-8s %-8s %-34s %s\n", "client", "network", "verdict", "reported", "tool_ms")
	for _, c := range clients {
		for _, net := range []string{"proxy", "kernel"} {
			r := got[net+"/"+c.name]
			fmt.Fprintf(&b, "%-52s %-8s %-8s %-34s %s\n", c.name, net, r.verdict, r.reported, r.toolMS)
		}
	}
	t.Logf("started.blackhole.survive, budget 10s:\n%s", b.String())
}

// namespacesOf lists the kernel network namespaces rig made that a process
// still lives in.
func namespacesOf(t *testing.T, rig int) []kernelnet.Namespace {
	t.Helper()
	all, err := kernelnet.Namespaces()
	if err != nil {
		t.Fatal(err)
	}
	var out []kernelnet.Namespace
	for _, ns := range all {
		if ns.Rig == rig {
			out = append(out, ns)
		}
	}
	return out
}

// hangAfterPreflight writes a tool that passes the preflight with
// ssh-honest.sh and then, in its first case, says so on the returned FIFO
// and hangs: the test acts while a tool's process lives in the tool's
// namespace.
func hangAfterPreflight(t *testing.T) (toolSpec, fifo string) {
	t.Helper()
	dir := t.TempDir()
	fifo = filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	honest, err := filepath.Abs("../../docs/examples/ssh-honest.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "tool.sh")
	body := "#!/bin/sh\n" +
		"if [ -e '" + dir + "/preflight-done' ]; then echo ready $$ > '" + fifo + "'; exec sleep 600; fi\n" +
		"touch '" + dir + "/preflight-done'\n" +
		"exec '" + honest + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return "exec:" + script, fifo
}

// toolReady waits until the tool of hangAfterPreflight runs in its first
// case, and returns its pid.
func toolReady(t *testing.T, fifo string) int {
	t.Helper()
	b, err := os.ReadFile(fifo) // opens once the tool writes to it
	f := strings.Fields(string(b))
	if err != nil || len(f) != 2 || f[0] != "ready" {
		t.Fatalf("tool's fifo: %q, %v", b, err)
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// startRig starts this binary as `sshrig run --net kernel` with tool.
func startRig(t *testing.T, tool string, cases string) *exec.Cmd {
	t.Helper()
	return startRigIn(t, t.TempDir(), "kernel", tool, cases)
}

// startRigIn starts this binary as `sshrig run --net NET` with tool and
// TMPDIR: a rig a test kills cannot remove its temporary directories
// (keys, scratch, gates), so they go with the test's.
func startRigIn(t *testing.T, tmp, net, tool, cases string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "run", "--net", net, "--tool", tool, "--cases", cases, "--out", t.TempDir(), "-q")
	cmd.Env = append(os.Environ(), testMainEnv+"=1", "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd
}

// startHungRig starts a kernel network run whose tool hangs in its first
// case, and returns once the tool runs there, in the rig's tool namespace.
func startHungRig(t *testing.T) *exec.Cmd {
	t.Helper()
	tool, fifo := hangAfterPreflight(t)
	cmd := startRig(t, tool, "started.blackhole.survive")
	toolReady(t, fifo)
	if len(namespacesOf(t, cmd.Process.Pid)) != 1 {
		t.Fatal("the hanging tool is not in the rig's tool namespace")
	}
	return cmd
}

// TestKernelNetworkLeavesNothing: no namespace of the kernel network (and
// so no veth pair or nftables table, which live and die with them) and no
// process outlives a run, an interrupted run, or — once `sshrig gc` ran —
// a crashed one.
func TestKernelNetworkLeavesNothing(t *testing.T) {
	requireKernel(t)
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		cmd := startRig(t, "exec:../../docs/examples/ssh-honest.sh", "none.*,started.*,accept.vanish.survive")
		if err := cmd.Wait(); err != nil {
			t.Fatalf("run: %v", err)
		}
		if left := namespacesOf(t, cmd.Process.Pid); len(left) > 0 {
			t.Errorf("namespaces left after the run: %+v", left)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		t.Parallel()
		cmd := startHungRig(t)
		cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
			t.Fatalf("exit %v, want %d", err, exitInterrupted)
		}
		if left := namespacesOf(t, cmd.Process.Pid); len(left) > 0 {
			t.Errorf("namespaces left after Ctrl-C: %+v", left)
		}
	})
	t.Run("crash", func(t *testing.T) {
		t.Parallel()
		cmd := startHungRig(t)
		rig := cmd.Process.Pid
		cmd.Process.Signal(syscall.SIGKILL) // the rig alone: its tool stays
		cmd.Wait()
		left := namespacesOf(t, rig)
		if len(left) != 1 || !left[0].Gone || len(left[0].PIDs) == 0 {
			t.Fatalf("after the crash: %+v, want the tool namespace, its rig gone, the tool in it", left)
		}
		// --run names a run that has no containers: plain 'sshrig gc'
		// removes every container of the rig's, and other packages' tests
		// (package containers) run theirs meanwhile. The kernel's part is
		// the same with or without it.
		gc := exec.Command(os.Args[0], "gc", "--run", "no-containers-of-this-test")
		gc.Env = append(os.Environ(), testMainEnv+"=1")
		out, _ := gc.CombinedOutput() // exit 3 where Docker is missing: the kernel's part is done first
		if !strings.Contains(string(out), fmt.Sprintf("of rig %d (gone)", rig)) {
			t.Errorf("sshrig gc did not say it emptied rig %d's namespace:\n%s", rig, out)
		}
		for _, pid := range left[0].PIDs {
			if len(procs.Scan(func(p procs.Proc) bool { return p.PID == pid })) > 0 {
				t.Errorf("process %d still runs after gc", pid)
			}
		}
		if again := namespacesOf(t, rig); len(again) > 0 {
			t.Errorf("namespaces left after gc: %+v", again)
		}
	})
}

// A vanish case needs the kernel network: without it the run stops before
// anything starts, as bad usage naming the matrix, the case and the field.
func TestVanishWithoutKernelIsUsage(t *testing.T) {
	matrixFile := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(matrixFile, []byte("cases:\n  - {id: v, moment: started, cut: vanish}\n"), 0o644)
	code, _, stderr, _ := sshrig(t, "run", "--matrix", matrixFile)
	if code != exitUsage || !strings.Contains(stderr, "case v: cut: vanish needs the kernel network") || !strings.Contains(stderr, matrixFile) {
		t.Fatalf("exit %d, want %d naming the file, case and field:\n%s", code, exitUsage, stderr)
	}
	code, _, stderr, _ = sshrig(t, "run", "--net", "nowhere")
	if code != exitUsage || !strings.Contains(stderr, `unknown network "nowhere" (valid: proxy, kernel)`) {
		t.Fatalf("--net nowhere: exit %d:\n%s", code, stderr)
	}
}

// TestKernelSameVerdictsAsProxy: on the kernel network the default matrix
// gives the reference (in-process, dialling from the tool's namespace) the
// verdicts it gives it behind the proxy, case by case, and gives
// ssh-honest.sh (a process started there) a pass at every case, as behind
// the proxy (docs/tool-contract.md's run of it, which TestDocsCommands
// holds to exit 0); the kernel
// matrix's vanish cases pass too.
func TestKernelSameVerdictsAsProxy(t *testing.T) {
	requireKernel(t)
	runOn := func(t *testing.T, tl, net string) map[string]string {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "run", "--tool", tl, "--net", net, "--out", dir, "-q")
		cmd.Env = append(os.Environ(), testMainEnv+"=1")
		out, _ := cmd.CombinedOutput()
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatalf("%s: no report: %v\n%s", net, err, out)
		}
		var rep struct {
			Net   string                              `json:"net"`
			Cases []struct{ ID, Cut, Verdict string } `json:"cases"`
		}
		if err := json.Unmarshal(b, &rep); err != nil || rep.Net != net {
			t.Fatalf("%s: report net %q, %v", net, rep.Net, err)
		}
		verdicts := map[string]string{}
		for _, c := range rep.Cases {
			verdicts[c.ID] = c.Verdict
			if c.Cut == "vanish" && c.Verdict != "pass" {
				t.Errorf("%s: %s", c.ID, c.Verdict)
			}
		}
		if want := len(matrix.DefaultMatrix()); net == "kernel" && len(verdicts) != want+len(matrix.KernelMatrix()) || net == "proxy" && len(verdicts) != want {
			t.Fatalf("%s: %d cases", net, len(verdicts))
		}
		return verdicts
	}
	t.Run("reference", func(t *testing.T) {
		t.Parallel()
		proxy, kernel := runOn(t, "reference", "proxy"), runOn(t, "reference", "kernel")
		for id, v := range proxy {
			if kernel[id] != v {
				t.Errorf("%s: %s behind the proxy, %s on the kernel network", id, v, kernel[id])
			}
		}
	})
	t.Run("ssh-honest", func(t *testing.T) {
		testpeer.Need(t, "ssh")
		t.Parallel()
		for id, v := range runOn(t, "exec:../../docs/examples/ssh-honest.sh", "kernel") {
			if v != "pass" {
				t.Errorf("%s: %s on the kernel network, pass behind the proxy", id, v)
			}
		}
	})
}

// A case run of the kernel network is replayed on the kernel network: a
// vanish case is found and cut as it was.
func TestReplayKeepsTheNetwork(t *testing.T) {
	requireKernel(t)
	t.Parallel()
	dir := t.TempDir()
	code, _, stderr, _ := sshrigIn(t, dir, "run", "--net", "kernel", "--cases", "started.vanish.survive")
	if code != exitPass {
		t.Fatalf("run: exit %d:\n%s", code, stderr)
	}
	// The event log tells who made the cut, as report.json does.
	if b, err := os.ReadFile(filepath.Join(dir, "events.jsonl")); err != nil || !regexp.MustCompile(`"event":"cut".*"net":"kernel"`).Match(b) {
		t.Fatalf("the event log's cut does not say the kernel made it: %v", err)
	}
	again := t.TempDir()
	var stdout, errb strings.Builder
	if code := run(context.Background(), []string{"replay", dir, "started.vanish.survive", "--out", again}, &stdout, &errb); code != exitPass {
		t.Fatalf("replay: exit %d:\n%s%s", code, stdout.String(), errb.String())
	}
	b, err := os.ReadFile(filepath.Join(again, "report.json"))
	if err != nil || !strings.Contains(string(b), `"net": "kernel"`) {
		t.Fatalf("the replay's report does not say it ran on the kernel network: %v", err)
	}
}

// Shards of a kernel network run merge into a report of the kernel network;
// a shard of another network is no shard of that run.
func TestMergeKeepsTheNetwork(t *testing.T) {
	requireKernel(t)
	t.Parallel()
	dir := t.TempDir()
	shard := func(net, i string) string {
		out := filepath.Join(dir, net+"-"+i)
		if code, _, stderr, _ := sshrigIn(t, out, "run", "--net", net, "--cases", "started.reset.*", "--shard", i+"/2"); code != exitPass {
			t.Fatalf("shard %s of %s: exit %d:\n%s", i, net, code, stderr)
		}
		return out
	}
	k1, k2, p2 := shard("kernel", "1"), shard("kernel", "2"), shard("proxy", "2")
	merge := func(out string, shards ...string) (int, string) {
		var b strings.Builder
		return run(context.Background(), append([]string{"merge", "--out", out}, shards...), &b, &b), b.String()
	}
	merged := filepath.Join(dir, "merged")
	if code, out := merge(merged, k1, k2); code != exitPass {
		t.Fatalf("merge: exit %d:\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(merged, "report.json")); err != nil || !strings.Contains(string(b), `"net": "kernel"`) {
		t.Fatalf("the merged report does not say kernel network: %v", err)
	}
	if code, out := merge(filepath.Join(dir, "mixed"), k1, p2); code == exitPass || !strings.Contains(out, "network kernel, proxy") {
		t.Fatalf("a kernel shard and a proxy shard merged: exit %d:\n%s", code, out)
	}
}
