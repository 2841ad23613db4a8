package verdict

// Rules for tools reached over the Model Context Protocol: what is wrong with
// a CallToolResult (or its absence) that an agent's planner acts on.
const (
	// RuleMCPIsError: isError says the opposite of the contract's ok.
	RuleMCPIsError = "mcp_is_error_contradicts_ok"
	// RuleMCPFreeText: no structuredContent and no contract in the text: the
	// planner would have to interpret a sentence.
	RuleMCPFreeText = "mcp_free_text"
	// RuleMCPErrorText: text that begins like an error while isError is
	// false, which many clients read as a successful call.
	RuleMCPErrorText = "mcp_error_as_text"
	// RuleMCPOutputSchema: structuredContent does not match the outputSchema
	// the tool declares.
	RuleMCPOutputSchema = "mcp_output_schema"
	// RuleMCPRPCError: a JSON-RPC error where a tool result was due.
	RuleMCPRPCError = "mcp_rpc_error"
	// RuleMCPServerDied: the server process exited, or its connection
	// broke, during the call.
	RuleMCPServerDied = "mcp_server_died"
	// RuleMCPNoAnswer: the server never answered tools/call.
	RuleMCPNoAnswer = "mcp_no_answer"
	// RuleMCPGarbage: the server wrote bytes that are not JSON-RPC on its
	// stdout, the protocol's channel.
	RuleMCPGarbage = "mcp_garbage_stdout"
	// RuleMCPNotListed: the session's tools/list does not name the tool.
	RuleMCPNotListed = "mcp_tool_not_listed"
)
