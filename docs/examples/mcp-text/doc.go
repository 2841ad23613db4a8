// Command mcp-text is an MCP server in the style of the common MCP SSH
// servers: its exec tool takes a host and a command, returns what the
// command printed as text content, and sets isError when anything failed —
// "Command failed with exit code N" when the command said so, "connection
// error: …" for everything that went wrong with the connection, before the
// command was sent or after. It speaks no result contract: sshrig reads it
// with the built-in mcp-text reading.
//
// With -lost-status-is-success it does what several such servers do when
// the channel closes without an exit status: it returns what was printed,
// as a success.
//
//	sshrig run --tool 'mcp:go run ./docs/examples/mcp-text' --mcp-tool exec \
//	  --mcp-args '{"host": "{host}", "port": {port}, "username": "{user}", "private_key_path": "{identity}", "known_hosts": "{known_hosts}", "command": "{command}"}' \
//	  --reading mcp-text
package main
