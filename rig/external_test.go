package rig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/procs"
	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// repoFile is the path of a file in the repository.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(here), "..", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// misbehaving writes a tool that passes the preflight (its first run, through
// the honest OpenSSH wrapper) and then runs body instead.
func misbehaving(t *testing.T, body string) tools.External {
	t.Helper()
	requireSSH(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "tool.sh")
	src := fmt.Sprintf("#!/bin/sh\nif [ ! -e %q ]; then : > %q; exec %q; fi\n%s\n",
		filepath.Join(dir, "ran"), filepath.Join(dir, "ran"), repoFile(t, "docs/examples/ssh-honest.sh"), body)
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return tools.External{Argv: []string{script}}
}

func requireSSH(t *testing.T) {
	t.Helper()
	testpeer.Need(t, "ssh")
}

const okResult = `printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"%s"}\n' "$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID"`

// TestBadExternalTools: each way a program can break the contract gets its own
// finding, the rig survives it, and nothing the tool started outlives the case.
func TestBadExternalTools(t *testing.T) {
	// A sleep of this test binary's own (its argument names the pid), so
	// that looking for one left behind sees no other package's sleeps.
	sleep := fmt.Sprintf("sleep 299.%d", os.Getpid())
	for _, tc := range []struct {
		name   string
		body   string
		budget time.Duration
		rule   string
		detail string
	}{
		{"prints nothing", "exit 0", 0, verdict.RuleMalformedResult, "empty output"},
		{"prints garbage", "echo 'all good!'", 0, verdict.RuleMalformedResult, "invalid JSON at offset 0"},
		{"invalid JSON", `printf '{"ok": true, "category": '`, 0, verdict.RuleMalformedResult, "end of the input"},
		{"50 MB of output", "head -c 52428800 /dev/zero | tr '\\0' x", 0, verdict.RuleMalformedResult, "printed 52428800 bytes"},
		{"two JSON objects", okResult + "\n" + okResult, 0, verdict.RuleMalformedResult, "trailing data"},
		{"a valid result for the wrong id", `printf '{"ok":true,"category":"succeeded","operation":"%s","retry":"never","correlation_id":"c-other"}\n' "$SSHRIG_OPERATION"`, 0, verdict.RuleCorrelationID, "c-other"},
		{"forks a grandchild that sleeps forever", "(" + sleep + " &)\n" + okResult, 0, verdict.RuleLeftRunning, "left"},
		{"never returns", sleep, 2 * time.Second, verdict.RuleHang, "no result within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := misbehaving(t, tc.body)
			cases, _ := matrix.Select(matrix.DefaultMatrix(), []string{"none.exit0"})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := Run(ctx, Options{Tool: tl, Cases: cases, Budget: tc.budget, Grace: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Cases[0]
			found := false
			for _, v := range c.Violations {
				found = found || (v.Rule == tc.rule && strings.Contains(v.Detail, tc.detail))
			}
			if c.Verdict != report.Fail || !found {
				t.Fatalf("verdict %s, violations %v; want %s mentioning %q", c.Verdict, c.Violations, tc.rule, tc.detail)
			}
			if left := procs.Named(sleep); len(left) > 0 {
				t.Fatalf("processes left behind: %v", left)
			}
		})
	}
}

// TestExternalToolPrintsIdentity: a program that prints its identity file
// gets a secret finding, and the run directory holds no key material.
func TestExternalToolPrintsIdentity(t *testing.T) {
	tl := misbehaving(t, `cat "$SSHRIG_IDENTITY" >&2
printf '{"ok":false,"category":"outcome_unknown","operation":"%s","retry":"reconcile_first","correlation_id":"%s","message":"key in %s"}\n' "$SSHRIG_OPERATION" "$SSHRIG_CORRELATION_ID" "$SSHRIG_IDENTITY"`)
	dir, err := CreateRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var identity string
	spy := spyProcess{External: tl, saw: func(p string) { identity = p }}
	cases, _ := matrix.Select(matrix.DefaultMatrix(), []string{"started.reset.survive"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Tool: spy, Cases: cases, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := rep.JSON()
	dir.WriteFile("report.json", b)
	dir.Close()
	var names []string
	for _, v := range rep.Cases[0].Violations {
		if v.Rule == verdict.RuleSecret {
			names = append(names, v.Detail)
		}
	}
	joined := strings.Join(names, "; ")
	if !strings.Contains(joined, "private key (PEM) appears in stderr") || !strings.Contains(joined, "identity file's path appears in stdout") {
		t.Fatalf("secret findings %q", joined)
	}
	key, err := os.ReadFile(identity)
	if err == nil {
		t.Fatal("the key directory outlived the run")
	}
	_ = key
	scanForKeys(t, dir.Path, identity)
}

// scanForKeys fails if any file under root holds a PEM private key block or
// the identity file's path.
func scanForKeys(t *testing.T, root, identity string) {
	t.Helper()
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		for _, bad := range []string{"PRIVATE KEY-----\n", "PRIVATE KEY-----\\n", identity} {
			if bad != "" && strings.Contains(string(data), bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
		return nil
	})
}

// spyProcess records the identity path it was given.
type spyProcess struct {
	tools.External
	saw func(string)
}

func (s spyProcess) RunProcess(ctx context.Context, t toolTarget, stdout, stderr ioWriter, started func(int)) toolExit {
	s.saw(t.Identity)
	return s.External.RunProcess(ctx, t, stdout, stderr, started)
}
