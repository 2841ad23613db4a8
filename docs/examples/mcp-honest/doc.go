// Command mcp-honest is an MCP server exposing ssh_exec over sshrig's
// reference client: it declares an outputSchema, returns the result contract
// in structuredContent, and sets isError exactly when ok is false. It dials
// afresh for every call, so no connection a cut killed is ever reused.
//
// It serves MCP on stdin/stdout, or with -http ADDR over streamable HTTP at
// /mcp (ADDR ":0" picks a port, printed on stderr as "listening on URL").
//
//	sshrig run --tool 'mcp:go run ./docs/examples/mcp-honest' --mcp-tool ssh_exec
package main
