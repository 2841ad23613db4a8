// Package mcptest holds defective MCP servers, each with one defect, that
// prove the rig names that defect (and the preflight state it breaks). Main
// runs one on stdin/stdout; tests run their own binary as the server, with
// the server's name in the environment variable Env.
package mcptest
