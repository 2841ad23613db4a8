// Package agentrun owns the agent under test (sshrig agent): an agent
// program, any MCP client, given a task, drives the rig's own MCP server
// while the rig cuts SSH underneath, and the rig judges the agent's calls,
// its approvals and its final answer against what really happened.
//
// It owns:
//
//   - the rig's MCP server for one case (server.go), served over streamable
//     HTTP on loopback (JSON responses, so a plain HTTP POST is a client):
//     create_record, lookup_record, attach_note and run_command run over
//     SSH against the case's target with the rig's honest reference client
//     and return the result contract in structuredContent with isError
//     exactly when ok is false, so that what is judged is the agent; in an
//     approval case, approve is the person the rig plays, and the tools
//     that change something run only with an approval given for that call,
//     in that process;
//   - approvals by MCP elicitation (elicit.go): a client that declares the
//     capability is asked by the server inside the call, and its host
//     reaches the same person at SSHRIG_PERSON_URL; each prompt's id tells
//     the rig whether the person saw it and what they said;
//   - the tasks (task.go): one deterministic instruction per scenario, in
//     words (SSHRIG_TASK) and as JSON (SSHRIG_TASK_JSON);
//   - the agent's processes (agent.go): started in a process group of
//     their own, bounded by the case's budget and a limit on calls, killed
//     with everything they started, their one-line final answer read as
//     the result contract with a record_id;
//   - the stdio bridge (bridge.go), for agents that only launch MCP
//     servers: SSHRIG_MCP_COMMAND relays stdin and stdout to the HTTP
//     server, the server's own questions (elicitations) included.
//
// What it finds beyond the final answer (a mutation after a denial, an
// approval reused or forged by the host, too many prompts, a loop, no answer, garbage) are
// tool.Findings with internal/verdict's agent rules; the transitions
// between the calls are judged from the server's own events, as every
// step sequence's are.
package agentrun
