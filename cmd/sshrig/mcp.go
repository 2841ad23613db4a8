package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/sshrig/sshrig/internal/mcptool"
	"github.com/sshrig/sshrig/tool"
)

// mcpFlags configure a tool given as 'mcp:COMMAND ARGS…' or
// 'mcp+http://HOST:PORT/PATH' (docs/mcp.md).
type mcpFlags struct {
	tool    string
	args    string
	session string
}

func (f *mcpFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.tool, "mcp-tool", "", "for an MCP tool: the name of the tool to call (docs/mcp.md)")
	fl.StringVar(&f.args, "mcp-args", "", "for an MCP tool: the tools/call arguments template, JSON with "+placeholderList()+" (default: every field, docs/mcp.md)")
	fl.StringVar(&f.session, "mcp-session", mcptool.Fresh, "for an MCP tool: 'fresh' (a server or session per case) or 'shared' (one for the whole run)")
}

// lookup resolves an MCP tool spec, or returns nil when name is none.
func (f *mcpFlags) lookup(name string, native bool) (tool.Tool, error) {
	if !mcptool.IsSpec(name) {
		if f.tool != "" || f.args != "" || f.session != mcptool.Fresh {
			return nil, usageError("--mcp-tool, --mcp-args and --mcp-session apply only to a tool given as 'mcp:COMMAND ARGS…' or 'mcp+http://HOST:PORT/PATH'")
		}
		return nil, nil
	}
	t, err := mcptool.New(name, mcptool.Options{Tool: f.tool, Args: f.args, Session: f.session, Native: native})
	if err != nil {
		return nil, usageError("--tool %s: %v", name, err)
	}
	return t, nil
}

// placeholderList is tool.Placeholders as a template writes them.
func placeholderList() string {
	var b strings.Builder
	for i, p := range tool.Placeholders {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("{" + p + "}")
	}
	return b.String()
}
