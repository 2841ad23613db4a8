package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sshrig/sshrig/internal/mcptool/mcptest"
	"github.com/sshrig/sshrig/internal/procs"
)

// A test binary asked to be a defective MCP server is one, before TestMain.
func init() {
	if name := os.Getenv(mcptest.Env); name != "" {
		os.Exit(mcptest.Main(name))
	}
}

// defectSpec is the --tool for one of mcptest's defective servers.
func defectSpec(name string) string {
	return "mcp:env " + mcptest.Env + "=" + name + " '" + os.Args[0] + "'"
}

// buildExample builds docs/examples/NAME into a directory of the test's.
func buildExample(t testing.TB, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("go", "build", "-o", bin, "../../docs/examples/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
}

// sshrig runs the CLI in this process and returns its exit code, output and
// the run's report.
func sshrig(t *testing.T, args ...string) (int, string, string, map[string]any) {
	t.Helper()
	return sshrigIn(t, t.TempDir(), args...)
}

// sshrigIn is sshrig with the run's directory named.
func sshrigIn(t *testing.T, dir string, args ...string) (int, string, string, map[string]any) {
	t.Helper()
	args = append(args, "--out", dir, "-q")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	var rep map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "report.json")); err == nil {
		json.Unmarshal(b, &rep)
	}
	return code, stdout.String(), stderr.String(), rep
}

// caseRules maps each case id of a report to its violations' rules.
func caseRules(rep map[string]any) map[string][]string {
	out := map[string][]string{}
	cases, _ := rep["cases"].([]any)
	for _, c := range cases {
		c := c.(map[string]any)
		id := c["id"].(string)
		out[id] = []string{}
		vs, _ := c["violations"].([]any)
		for _, v := range vs {
			out[id] = append(out[id], v.(map[string]any)["rule"].(string))
		}
	}
	return out
}

func has(rules []string, rule string) bool {
	for _, r := range rules {
		if r == rule {
			return true
		}
	}
	return false
}

// TestMCPPreflightStates: a server that does not initialise, one that lists
// no tool of that name, and one whose listed tool fails when called each stop
// the run with exit 3, naming the state that failed.
func TestMCPPreflightStates(t *testing.T) {
	for _, tc := range []struct{ server, says string }{
		{"no-init", "preflight: installed: the server did not initialise"},
		{"lists-other", `preflight: loaded: tools/list resolves 0 tools named "ssh_exec"`},
		{"call-fails", "preflight: invocable: mcp_rpc_error: tools/call returned JSON-RPC error -32603 (upstream session pool exhausted)"},
	} {
		t.Run(tc.server, func(t *testing.T) {
			t.Parallel()
			code, _, stderr, _ := sshrig(t, "run", "--tool", defectSpec(tc.server), "--mcp-tool", mcptest.ToolName)
			if code != exitRigFailed || !strings.Contains(stderr, tc.says) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, exitRigFailed, tc.says, stderr)
			}
		})
	}
}

// httpServer starts the honest example on streamable HTTP and returns its
// tool spec.
func httpServer(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "-http", "127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go func() { // keep draining what the server logs
				for sc.Scan() {
				}
			}()
			return "mcp+" + url
		}
	}
	t.Fatalf("the server never said where it listens: %v", sc.Err())
	return ""
}

// summary is a report's summary: cases, pass, fail, inconclusive, skipped.
func summary(rep map[string]any) [5]int {
	s, _ := rep["summary"].(map[string]any)
	var out [5]int
	for i, k := range []string{"cases", "pass", "fail", "inconclusive", "skipped"} {
		n, _ := s[k].(float64)
		out[i] = int(n)
	}
	return out
}

// verdicts maps each case id of a report to its verdict.
func verdicts(rep map[string]any) map[string]string {
	out := map[string]string{}
	cases, _ := rep["cases"].([]any)
	for _, c := range cases {
		c := c.(map[string]any)
		out[c["id"].(string)], _ = c["verdict"].(string)
	}
	return out
}

// TestMCPHonestPasses: the honest example passes the whole default matrix
// (82 cases) in both session modes and over both transports, four runs at
// once. The 15 kill-helper cases are skipped, as for the in-process
// reference: the rig does not kill an MCP server as a helper.
func TestMCPHonestPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole default matrix, four times")
	}
	bin := buildExample(t, "mcp-honest")
	for _, tc := range []struct{ name, session string }{
		{"stdio", "fresh"}, {"stdio", "shared"}, {"http", "fresh"}, {"http", "shared"},
	} {
		t.Run(tc.name+"-"+tc.session, func(t *testing.T) {
			t.Parallel()
			spec := "mcp:" + bin
			if tc.name == "http" {
				spec = httpServer(t, bin)
			}
			code, stdout, stderr, rep := sshrig(t, "run", "--tool", spec, "--mcp-tool", "ssh_exec", "--mcp-session", tc.session, "--parallel", "16")
			if got, want := summary(rep), [5]int{82, 67, 0, 0, 15}; code != 0 || got != want {
				t.Fatalf("exit %d, summary (cases, pass, fail, inconclusive, skipped) %v, want 0 and %v:\n%s\n%s", code, got, want, stdout, stderr)
			}
			cases, _ := rep["cases"].([]any)
			for _, c := range cases {
				c := c.(map[string]any)
				id, reason := c["id"].(string), fmt.Sprint(c["reason"])
				if c["verdict"] == "skipped" && (!strings.Contains(id, ".kill-helper.") || !strings.Contains(reason, "speaks a protocol of its own (MCP)")) {
					t.Errorf("%s skipped: %s", id, reason)
				}
			}
		})
	}
}

// TestMCPNaiveFails: over the whole default matrix, the naive example passes
// exactly where nothing went wrong (the command ran and exited 0, so its
// contract is in the text) and fails, with mcp_free_text, wherever an error
// reached the agent as raw text with isError and no category: every refused,
// cut or failed call, at every moment. Where the upstream answer is broken
// (c04.*) it reports success, as it does not read the answer.
func TestMCPNaiveFails(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole default matrix")
	}
	t.Parallel() // after the tests that count this process's children
	bin := buildExample(t, "mcp-naive")
	// Most of its cases wait out a blackhole: four at a time.
	code, stdout, stderr, rep := sshrig(t, "run", "--tool", "mcp:"+bin, "--mcp-tool", "ssh_exec", "--parallel", "4")
	if got, want := summary(rep), [5]int{82, 4, 63, 0, 15}; code != exitFail || got != want {
		t.Fatalf("exit %d, summary (cases, pass, fail, inconclusive, skipped) %v, want %d and %v:\n%s\n%s", code, got, exitFail, want, stdout, stderr)
	}
	passes := map[string]bool{"none.exit0": true, "exit-status.reset.exit0": true, "exit-status.close.exit0": true, "exit-status.blackhole.exit0": true}
	verdict := verdicts(rep)
	cases, _ := rep["cases"].([]any)
	for id, rules := range caseRules(rep) {
		var want []string
		switch {
		case strings.Contains(id, ".kill-helper."):
			if verdict[id] != "skipped" {
				t.Errorf("%s: %s, want skipped", id, verdict[id])
			}
			continue
		case passes[id]:
		case strings.HasPrefix(id, "c04."):
			want = []string{"unexpected_category"}
		default:
			want = []string{"malformed_result", "mcp_free_text"}
		}
		if strings.Join(rules, ",") != strings.Join(want, ",") {
			t.Errorf("%s: rules %v, want %v", id, rules, want)
		}
	}
	// The finding quotes what the agent was given.
	for _, c := range cases {
		c := c.(map[string]any)
		if c["id"] != "started.reset.survive" {
			continue
		}
		vs := c["violations"].([]any)
		d := vs[len(vs)-1].(map[string]any)["detail"].(string)
		if !strings.Contains(d, `only "Error: wait: remote command exited without exit status or exit signal"`) {
			t.Errorf("started.reset.survive: mcp_free_text says %q", d)
		}
	}
}

// connected reports whether the server accepted a connection on case id's
// own address, from the case's transcript in run directory dir.
func connected(t *testing.T, dir, id string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "transcripts", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Events []struct {
			Kind string `json:"kind"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	for _, e := range tr.Events {
		if e.Kind == "conn_accepted" {
			return true
		}
	}
	return false
}

// TestMCPSharedCachedConnection: in shared mode, a server that keeps one SSH
// connection dials it in the case a cut kills it (its first call, the
// preflight, it answers as the honest server does), and answers the case
// after the cut from that dead connection, never dialling that case's
// address: the rig fails that case. The honest server, which dials per call,
// passes the same two cases in the same mode. No server is left running.
func TestMCPSharedCachedConnection(t *testing.T) {
	cases := []string{"--mcp-session", "shared", "--parallel", "1", "--cases", "started.reset.survive,none.exit0"}
	spec := "mcp:env " + mcptest.Env + "=cached-conn " + mcptest.HonestCallsEnv + "=1 '" + os.Args[0] + "'"
	dir := t.TempDir()
	code, stdout, stderr, rep := sshrigIn(t, dir, append([]string{"run", "--tool", spec, "--mcp-tool", mcptest.ToolName}, cases...)...)
	if code != exitFail {
		t.Fatalf("exit %d, want %d:\n%s\n%s", code, exitFail, stdout, stderr)
	}
	v, rules := verdicts(rep), caseRules(rep)
	// The cut case is the cached connection's own: it dialled, the cut
	// landed, and what it reported was right.
	if v["started.reset.survive"] != "pass" || !connected(t, dir, "started.reset.survive") {
		t.Errorf("started.reset.survive: %s %v, connected %t; want a pass over its own connection", v["started.reset.survive"], rules["started.reset.survive"], connected(t, dir, "started.reset.survive"))
	}
	if v["none.exit0"] != "fail" || !has(rules["none.exit0"], "unsafe_category") || reportedCategory(rep, "none.exit0") != "local_failure" {
		t.Errorf("none.exit0 after the cut: %s %v reporting %q; want a fail, unsafe_category, local_failure from the dead connection",
			v["none.exit0"], rules["none.exit0"], reportedCategory(rep, "none.exit0"))
	}
	if connected(t, dir, "none.exit0") {
		t.Errorf("none.exit0: the server dialled this case's address; it was to reuse the dead connection")
	}
	if kids := procs.Children(os.Getpid()); len(kids) > 0 {
		t.Fatalf("processes left after the run: %v", kids)
	}

	honest := buildExample(t, "mcp-honest")
	code, stdout, stderr, rep = sshrig(t, append([]string{"run", "--tool", "mcp:" + honest, "--mcp-tool", "ssh_exec"}, cases...)...)
	if code != 0 || summary(rep) != [5]int{2, 2, 0, 0, 0} {
		t.Fatalf("honest: exit %d, summary %v, want 0 and two passes:\n%s\n%s", code, summary(rep), stdout, stderr)
	}
	if kids := procs.Children(os.Getpid()); len(kids) > 0 {
		t.Fatalf("processes left after the honest run: %v", kids)
	}
}

// TestDocsMCPHTTP runs the streamable HTTP example of docs/mcp.md as written,
// on a free port: the server the user starts, then the run against it.
func TestDocsMCPHTTP(t *testing.T) {
	t.Parallel() // after the tests that count this process's children
	doc, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if !ok || len(lines) != 2 || !strings.HasSuffix(lines[0], " &") || !strings.HasPrefix(lines[1], "sshrig run ") {
		t.Fatalf("docs/mcp.md's sh block is not 'server &' then 'sshrig run': %q", lines)
	}
	const docPort = "127.0.0.1:8931"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().String()
	ln.Close()
	server := exec.Command("sh", "-c", "exec "+strings.ReplaceAll(strings.TrimSuffix(lines[0], " &"), docPort, port))
	server.Dir = "../.."
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := server.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-server.Process.Pid, syscall.SIGKILL)
		server.Wait()
	}()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "listening on ") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	args := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(lines[1], "sshrig "), docPort, port))
	code, stdout, errOut, _ := sshrig(t, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s\n%s", lines[1], code, stdout, errOut)
	}
}

// TestMCPUsage: bad MCP flags are bad usage (exit 2) with a message naming
// the flag; a tool name the server does not list stops at loaded, as
// docs/mcp.md prints it.
func TestMCPUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--tool", "mcp:true"}, "no MCP tool named (--mcp-tool NAME)"},
		{[]string{"--mcp-tool", "ssh_exec"}, "apply only to a tool given as 'mcp:"},
		{[]string{"--tool", "mcp:true", "--mcp-tool", "x", "--mcp-session", "bogus"}, `session "bogus" is neither "fresh" nor "shared"`},
		{[]string{"--tool", "mcp:true", "--mcp-tool", "x", "--mcp-args", `{"cmd": {command}}`}, "arguments template"},
		{[]string{"--tool", "mcp+http://", "--mcp-tool", "x"}, "is not an http(s)://HOST:PORT/PATH address"},
		{[]string{"--tool", "mcp:", "--mcp-tool", "x"}, "names no program"},
	} {
		code, _, stderr, _ := sshrig(t, append([]string{"run"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.says) {
			t.Errorf("%q: exit %d, want %d with %q:\n%s", tc.args, code, exitUsage, tc.says, stderr)
		}
	}
	code, _, stderr, _ := sshrig(t, "run", "--tool", "mcp:go run ../../docs/examples/mcp-honest", "--mcp-tool", "no_such_tool")
	const says = `preflight: loaded: tools/list resolves 0 tools named "no_such_tool" (the server lists only ssh_exec)`
	if code != exitRigFailed || !strings.Contains(stderr, says) {
		t.Errorf("exit %d, want %d with %q:\n%s", code, exitRigFailed, says, stderr)
	}
}

// TestMCPSharedDefects: in one shared session that answered the preflight
// honestly, each defect gets its own finding on the next case, and once the
// run is over no server process is left.
func TestMCPSharedDefects(t *testing.T) {
	for _, tc := range []struct{ server, rule, honest string }{
		{"crash", "mcp_server_died", "1"},
		{"hang", "mcp_no_answer", "1"},
		{"garbage", "mcp_garbage_stdout", "1"},
		{"is-error-lies", "mcp_is_error_contradicts_ok", "1"},
		{"replays-last", "correlation_id", "0"}, // its first answer is its own
		{"key-in-content", "secret", "1"},
		{"key-in-stderr", "secret", "1"},
	} {
		t.Run(tc.server, func(t *testing.T) {
			spec := "mcp:env " + mcptest.Env + "=" + tc.server + " " + mcptest.HonestCallsEnv + "=" + tc.honest + " '" + os.Args[0] + "'"
			code, stdout, stderr, rep := sshrig(t, "run", "--tool", spec, "--mcp-tool", mcptest.ToolName, "--mcp-session", "shared",
				"--parallel", "1", "--budget", "1s", "--cases", "started.reset.survive,none.exit0")
			rules := caseRules(rep)["started.reset.survive"]
			if code != exitFail || !has(rules, tc.rule) {
				t.Fatalf("exit %d, started.reset.survive rules %v; want %d with %s\n%s\n%s", code, rules, exitFail, tc.rule, stdout, stderr)
			}
			if tc.server == "hang" && !has(rules, "hang") {
				t.Errorf("a server that never answers is a hang too: %v", rules)
			}
			if kids := procs.Children(os.Getpid()); len(kids) > 0 {
				t.Fatalf("processes left after the run: %v", kids)
			}
		})
	}
}

// TestMCPSharedPoolAcrossCases: a server that keeps one connection for every
// call, whatever address the call names, carries one case's command over
// another case's connection when two cases run at once. The rig attributes a
// connection to the case that opened it, so the command shows up in the
// wrong case's evidence: that case gets foreign_request (not a follow-up of
// its own), and a case whose address saw no connection, yet got a result
// claiming a request was sent, gets no_connection. Which cases share
// depends on scheduling, so the test checks the rule against each case's
// own evidence.
func TestMCPSharedPoolAcrossCases(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"run", "--tool", defectSpec("pool-redials"), "--mcp-tool", mcptest.ToolName,
		"--mcp-session", "shared", "--parallel", "2", "--cases", "none.*,c04.*", "--out", dir, "-q"}, &stdout, &stderr)
	if code != exitFail {
		t.Fatalf("exit %d, want %d:\n%s\n%s", code, exitFail, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	json.Unmarshal(b, &rep)
	rules := caseRules(rep)
	for id, rs := range rules {
		tb, err := os.ReadFile(filepath.Join(dir, "transcripts", id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			Target struct {
				CorrelationID string `json:"correlation_id"`
			} `json:"target"`
			Events []struct {
				Kind     string `json:"kind"`
				MarkerID string `json:"marker_id"`
			} `json:"events"`
		}
		json.Unmarshal(tb, &tr)
		hosted, connected := false, false
		for _, e := range tr.Events {
			hosted = hosted || (e.Kind == "exec" && e.MarkerID != "" && e.MarkerID != tr.Target.CorrelationID)
			connected = connected || e.Kind == "conn_accepted"
		}
		if hosted != has(rs, "foreign_request") {
			t.Errorf("%s: carried another case's command: %t; rules %v", id, hosted, rs)
		}
		category := reportedCategory(rep, id)
		claims := category != "" && category != "local_failure"
		if (!connected && claims) != has(rs, "no_connection") {
			t.Errorf("%s: connected %t, reported %q; rules %v", id, connected, category, rs)
		}
	}
}

// reportedCategory is the category case id reported, "" when none parsed.
func reportedCategory(rep map[string]any, id string) string {
	cases, _ := rep["cases"].([]any)
	for _, c := range cases {
		c := c.(map[string]any)
		if c["id"] == id {
			r, _ := c["reported"].(map[string]any)
			cat, _ := r["category"].(string)
			return cat
		}
	}
	return ""
}

// TestMCPTextReading: an MCP SSH server in the common style (output as
// text, isError, "connection error: …" for every transport failure), with
// no result contract, is judged case by case through the mcp-text reading:
// the cases with no fault pass, "connection error" stands both for a cut
// before anything was sent (accept) and after the command started, so both
// fail with ambiguous_report; and the variant that takes a channel closed
// without an exit status for a success is unsafe once the command started.
func TestMCPTextReading(t *testing.T) {
	bin := buildExample(t, "mcp-text")
	args := `{"host": "{host}", "port": {port}, "username": "{user}", "private_key_path": "{identity}", "known_hosts": "{known_hosts}", "command": "{command}"}`
	code, stdout, stderr, rep := sshrig(t, "run", "--tool", "mcp:"+bin, "--mcp-tool", "exec", "--mcp-args", args,
		"--reading", "mcp-text", "--cases", "none.*,accept.reset.survive,started.reset.survive")
	rules := caseRules(rep)
	v := verdicts(rep)
	if code != 1 || v["none.exit0"] != "pass" || v["none.exit3"] != "pass" ||
		!has(rules["accept.reset.survive"], "ambiguous_report") || !has(rules["started.reset.survive"], "ambiguous_report") {
		t.Fatalf("exit %d, verdicts %v, rules %v:\n%s\n%s", code, v, rules, stdout, stderr)
	}
	if !strings.Contains(stdout, "connection error") || !strings.Contains(stdout, "local_failure/bounded (1, e.g. accept.reset.survive); outcome_unknown/reconcile_first (1, e.g. started.reset.survive)") {
		t.Errorf("the ambiguity table does not name what 'connection error' conflates:\n%s", stdout)
	}
	code, stdout, stderr, rep = sshrig(t, "run", "--tool", "mcp:"+bin+" -lost-status-is-success", "--mcp-tool", "exec", "--mcp-args", args,
		"--reading", "mcp-text", "--cases", "none.exit0,started.reset.survive")
	if rules := caseRules(rep); code != 1 || !has(rules["started.reset.survive"], "unsafe_category") {
		t.Fatalf("exit %d, rules %v:\n%s\n%s", code, rules, stdout, stderr)
	}
}
