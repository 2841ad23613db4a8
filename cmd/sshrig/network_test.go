package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sshrig/sshrig/internal/kernelnet"
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
