// Command mcp-naive is an MCP server in the style many published SSH MCP
// servers follow: ssh_exec runs the command and, when it works, answers the
// result contract as text; when anything goes wrong it returns the raw error
// text with isError and no category, so an agent cannot tell "failed" from
// "may have run". sshrig fails it at every moment where that matters.
//
//	sshrig run --tool 'mcp:go run ./docs/examples/mcp-naive' --mcp-tool ssh_exec
package main
