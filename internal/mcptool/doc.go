// Package mcptool owns the MCP tool kind: an MCP server under test, reached
// over stdio ("mcp:COMMAND ARGS…", a server started by the rig) or streamable
// HTTP ("mcp+http://HOST:PORT/PATH", a server the user started). The rig is
// the MCP client (github.com/modelcontextprotocol/go-sdk): it calls the named
// tool with the case's target in an arguments template, reads the result
// contract from the CallToolResult, and reports what is wrong with the MCP
// layer itself (isError against ok, free text, a JSON-RPC error, a server
// that died, hung or wrote garbage) as findings. Its preflight checks the
// states of seed 000: installed (the server starts and initialises) and
// loaded (tools/list names the tool); the rig's no-fault case proves the
// third, invocable.
//
// Package mcptest holds the defective servers the tests use.
package mcptool
