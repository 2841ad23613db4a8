package reading

import (
	"errors"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

func TestBuiltinsLoad(t *testing.T) {
	names := Builtins()
	if strings.Join(names, ",") != "ansible,mcp-text,ssh" {
		t.Fatalf("Builtins() = %v", names)
	}
	for _, n := range names {
		r, ok := Builtin(n)
		if !ok || r.Name != n || len(r.Rules) == 0 {
			t.Errorf("Builtin(%q) = %+v, %t", n, r, ok)
		}
	}
	if _, ok := Builtin("nope"); ok {
		t.Error("Builtin(nope) found something")
	}
}

func exited(code int, stderr string) Report {
	return Report{Exited: true, ExitCode: code, Stderr: []byte(stderr)}
}

func TestSSHReading(t *testing.T) {
	r, _ := Builtin("ssh")
	for _, tc := range []struct {
		rep  Report
		rule string
		cat  result.Category
	}{
		{exited(0, ""), "exit 0", result.Succeeded},
		{exited(3, ""), "exit 1-254", result.ConfirmedFailure},
		{exited(254, ""), "exit 1-254", result.ConfirmedFailure},
		// Messages as OpenSSH 9.2 prints them.
		{exited(255, "ssh: connect to host 127.0.0.1 port 1: Connection refused\r\n"), "exit 255: connection refused", result.LocalFailure},
		{exited(255, "Host key verification failed.\r\n"), "exit 255: host key verification failed", result.LocalFailure},
		{exited(255, "sshrig@127.0.0.1: Permission denied (publickey).\r\n"), "exit 255: permission denied", result.AuthenticationFailed},
		{exited(255, "kex_exchange_identification: read: Connection reset by peer\r\nConnection reset by 127.0.0.1 port 40001\r\n"), "exit 255: banner exchange", result.LocalFailure},
		{exited(255, "Timeout, server 127.0.0.1 not responding.\r\n"), "exit 255: server not responding", result.OutcomeUnknown},
		{exited(255, "Read from remote host 127.0.0.1: Connection reset by peer\r\n"), "exit 255: connection reset", result.OutcomeUnknown},
		{exited(255, "Connection to 127.0.0.1 closed by remote host.\r\n"), "exit 255: connection closed", result.OutcomeUnknown},
		{exited(255, ""), "exit 255: other", result.OutcomeUnknown},
		{Report{Signal: "killed"}, "killed by a signal", result.OutcomeUnknown},
	} {
		got, err := r.Read(tc.rep)
		if err != nil || got.Rule != tc.rule || got.Category != tc.cat {
			t.Errorf("Read(%s) = %+v, %v; want rule %q, %s", Describe(tc.rep), got, err, tc.rule, tc.cat)
		}
	}
}

func TestAnsibleReading(t *testing.T) {
	r, _ := Builtin("ansible")
	doc := func(host string) string {
		return `{"plays": [{"tasks": [{"hosts": {"h": ` + host + `}}]}], "stats": {"h": ` + stats(host) + `}}`
	}
	for _, tc := range []struct {
		stdout string
		rule   string
	}{
		{doc(`{"rc": 0, "changed": true, "failed": false}`), "ok"},
		{doc(`{"rc": 3, "failed": true, "msg": "non-zero return code"}`), "failed: non-zero return code"},
		{doc(`{"rc": -9, "failed": true, "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error"}`), "failed: module failure"},
		{doc(`{"unreachable": true, "msg": "Failed to connect to the host via ssh"}`), "unreachable"},
	} {
		got, err := r.Read(Report{Exited: true, ExitCode: 2, Stdout: []byte(tc.stdout)})
		if err != nil || got.Rule != tc.rule {
			t.Errorf("Read(%s) = %+v, %v; want %q", tc.stdout, got, err, tc.rule)
		}
	}
	got, err := r.Read(Report{Exited: true, ExitCode: 1, Stdout: []byte("ERROR! no inventory")})
	if err != nil || got.Rule != "no JSON: ansible itself failed" {
		t.Errorf("prose stdout: %+v, %v", got, err)
	}
}

// stats is the json callback's stats line for a host result.
func stats(host string) string {
	switch {
	case strings.Contains(host, "unreachable"):
		return `{"ok": 0, "failures": 0, "unreachable": 1}`
	case strings.Contains(host, `"failed": true`):
		return `{"ok": 0, "failures": 1, "unreachable": 0}`
	}
	return `{"ok": 1, "failures": 0, "unreachable": 0}`
}

func TestMCPTextReading(t *testing.T) {
	r, _ := Builtin("mcp-text")
	for _, tc := range []struct {
		a    tool.CallResult
		rule string
	}{
		{tool.CallResult{Text: "hello"}, "isError false"},
		{tool.CallResult{IsError: true, Text: "Error: connection error: read ECONNRESET"}, "connection error"},
		{tool.CallResult{IsError: true, Text: "connect ECONNREFUSED 127.0.0.1:22: Connection refused"}, "connection refused"},
		{tool.CallResult{IsError: true, Text: "Command failed with exit code 3"}, "command failed"},
		{tool.CallResult{IsError: true, Text: "All configured authentication methods failed"}, "authentication failed"},
		{tool.CallResult{IsError: true, Text: "something odd"}, "isError true: other"},
	} {
		a := tc.a
		got, err := r.Read(Report{MCP: &a})
		if err != nil || got.Rule != tc.rule {
			t.Errorf("Read(%+v) = %+v, %v; want %q", tc.a, got, err, tc.rule)
		}
	}
}

func TestUnread(t *testing.T) {
	r, err := Load("r.yaml", []byte("reading: x\ntool: exec\nrules:\n  - name: ok\n    exit: 0\n    category: succeeded\n    retry: never\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Read(exited(7, "boom\n"))
	if !errors.Is(err, ErrUnread) || !strings.Contains(err.Error(), `exit 7, stderr "boom"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := r.Read(Report{Signal: "killed"}); !errors.Is(err, ErrUnread) {
		t.Errorf("a signal matched an exit rule: %v", err)
	}
}

func TestStructuredAndJSON(t *testing.T) {
	r, err := Load("r.yaml", []byte(`reading: s
tool: mcp
rules:
  - name: done
    structured:
      - path: '$.status'
        equals: done
      - path: '$.exit'
        equals: 0
    category: succeeded
    retry: never
  - name: has-error
    structured:
      path: '$.error'
    category: outcome_unknown
    retry: reconcile_first
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    any
		rule string
	}{
		{map[string]any{"status": "done", "exit": float64(0)}, "done"},
		{map[string]any{"status": "done", "exit": float64(1), "error": "x"}, "has-error"},
	} {
		got, err := r.Read(Report{MCP: &tool.CallResult{Structured: tc.s}})
		if err != nil || got.Rule != tc.rule {
			t.Errorf("Read(%v) = %+v, %v; want %q", tc.s, got, err, tc.rule)
		}
	}
	if _, err := r.Read(Report{MCP: &tool.CallResult{}}); !errors.Is(err, ErrUnread) {
		t.Errorf("no structuredContent: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"unknown field", "reading: x\ntool: exec\nrules:\n  - name: a\n    exti: 0\n    category: succeeded\n    retry: never\n",
			[]string{`f.yaml:5:5: rules[0].exti: unknown field "exti"`}},
		{"bad regexp", "reading: x\ntool: exec\nrules:\n  - name: a\n    stderr: 'a(b'\n    category: succeeded\n    retry: never\n",
			[]string{"f.yaml:5:13: rules[0].stderr: bad regular expression"}},
		{"bad path", "reading: x\ntool: exec\nrules:\n  - name: a\n    json:\n      path: '$.a[?'\n    category: succeeded\n    retry: never\n",
			[]string{"f.yaml:6:13: rules[0].json.path: bad JSON path"}},
		{"wrong kind", "reading: x\ntool: mcp\nrules:\n  - name: a\n    exit: 0\n    category: succeeded\n    retry: never\n",
			[]string{"f.yaml:5:5: rules[0].exit: applies to exec tools only"}},
		{"bad category and missing retry", "reading: x\ntool: exec\nrules:\n  - name: a\n    category: fine\n",
			[]string{`f.yaml:4:5: rules[0].retry: missing`, `f.yaml:5:15: rules[0].category: unknown category: "fine"`}},
		{"exit out of range", "reading: x\ntool: exec\nrules:\n  - name: a\n    exit: [0, 300, 9-2]\n    category: succeeded\n    retry: never\n",
			[]string{"rules[0].exit[1]: 300: want an exit code", `rules[0].exit[2]: "9-2"`}},
		{"duplicate names", "reading: x\ntool: exec\nrules:\n  - name: a\n    exit: 0\n    category: succeeded\n    retry: never\n  - name: a\n    exit: 1\n    category: confirmed_failure\n    retry: never\n",
			[]string{`f.yaml:8:5: rules[1].name: duplicate name "a" (first at line 4)`}},
		{"missing top", "tool: exec\n", []string{"reading: missing", "rules: missing"}},
		{"bad tool", "reading: x\ntool: ftp\nrules: []\n", []string{`f.yaml:2:7: tool: "ftp": want exec or mcp`}},
		{"not yaml", "reading: [x\n", []string{"f.yaml:1:10: not valid YAML"}},
		{"empty", "", []string{"f.yaml:1:1: the file is empty"}},
		{"both equals and matches", "reading: x\ntool: exec\nrules:\n  - name: a\n    json: {path: '$.a', equals: 1, matches: 'x'}\n    category: succeeded\n    retry: never\n",
			[]string{"rules[0].json: give equals or matches, not both"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("f.yaml", []byte(tc.src))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	for _, n := range Builtins() {
		src, _ := BuiltinSource(n)
		f.Add(src)
	}
	f.Add([]byte("reading: x\ntool: exec\nrules:\n  - name: a\n    exit: 1-3\n    json: {path: '$..a', matches: '^x'}\n    category: succeeded\n    retry: never\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Load("f.yaml", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		// A loaded reading reads any report without panicking.
		_, _ = r.Read(Report{Exited: true, ExitCode: 1, Stdout: data, Stderr: data, MCP: &tool.CallResult{Text: string(data)}})
		_, _ = r.Read(Report{Signal: "killed", Stdout: []byte(`{"a": [1, "x"]}`)})
	})
}
