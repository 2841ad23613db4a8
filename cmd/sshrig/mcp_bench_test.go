package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/mcptool"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/tool"
)

// benchCases are cases with no deadline to wait out (no blackhole, no
// stall), so that what a case costs is the rig's and the tool's own work.
var benchCases = []string{"none.exit0", "none.exit3", "handshake.reset.survive", "exec.reset.survive",
	"started.reset.survive", "started.close.survive", "finished.close.survive", "exit-status.reset.exit0"}

// BenchmarkToolPerCase measures, in one run, what a case costs with the
// reference client in process, as an external program (exec:sshrig exec),
// and behind the honest MCP server, shared and fresh (docs/performance.md).
// Each iteration runs the same cases with every tool in turn, so a change in
// the machine's load falls on all of them alike; each tool's figure is its
// own metric (ns/op is the four runs together). One case at a time, so
// ms/case is one case's whole cost.
func BenchmarkToolPerCase(b *testing.B) {
	dir := b.TempDir()
	script := "#!/bin/sh\n" + testMainEnv + "=1 exec '" + os.Args[0] + "' \"$@\"\n"
	self := filepath.Join(dir, "sshrig")
	if err := os.WriteFile(self, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	honest := buildExample(b, "mcp-honest")
	cases, err := matrix.Select(matrix.DefaultMatrix(), benchCases)
	if err != nil {
		b.Fatal(err)
	}
	mcpTool := func(session string) func() tool.Tool {
		return func() tool.Tool {
			m, err := mcptool.New("mcp:"+honest, mcptool.Options{Tool: "ssh_exec", Session: session})
			if err != nil {
				b.Fatal(err)
			}
			return m
		}
	}
	runs := []struct {
		name  string
		tool  func() tool.Tool
		total time.Duration
		n     int
	}{
		{name: "reference", tool: func() tool.Tool { return tools.Reference{} }},
		{name: "exec-sshrig-exec", tool: func() tool.Tool { return tools.External{Argv: []string{self, "exec"}} }},
		{name: "mcp-shared", tool: mcpTool(mcptool.Shared)},
		{name: "mcp-fresh", tool: mcpTool(mcptool.Fresh)},
	}
	for b.Loop() {
		for i := range runs {
			bc := &runs[i]
			tl := bc.tool()
			start := time.Now()
			rep, err := rig.Run(context.Background(), rig.Options{Tool: tl, Cases: cases, Parallel: 1})
			bc.total += time.Since(start)
			if c, ok := tl.(interface{ Close() error }); ok {
				c.Close()
			}
			if err != nil || rep.Summary.Fail+rep.Summary.Inconclusive != 0 {
				b.Fatalf("%s: %v %v", bc.name, err, rep.SummaryLine())
			}
			bc.n += rep.Summary.Executed() + 1 // and the preflight's case
		}
	}
	for _, bc := range runs {
		b.ReportMetric(float64(bc.total.Microseconds())/1000/float64(bc.n), "ms/case:"+bc.name)
	}
}
