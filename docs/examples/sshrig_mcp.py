"""A minimal MCP client for sshrig's example agents: standard library only.

The rig serves its MCP tools over streamable HTTP with JSON answers
(SSHRIG_MCP_URL), so one POST per message is the whole protocol. An agent
that launches servers instead can run SSHRIG_MCP_COMMAND, which speaks the
same over stdio.
"""
import json
import os
import sys
import urllib.request


class Client:
    """One MCP session with the rig's server."""

    def __init__(self, url=None):
        self.url = url or os.environ["SSHRIG_MCP_URL"]
        self.session = None
        self.next_id = 0
        self._request("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "sshrig-example-agent", "version": "1"},
        })
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _post(self, msg):
        req = urllib.request.Request(
            self.url, data=json.dumps(msg).encode(), method="POST",
            headers={"Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream"})
        if self.session:
            req.add_header("Mcp-Session-Id", self.session)
        with urllib.request.urlopen(req, timeout=120) as resp:
            self.session = resp.headers.get("Mcp-Session-Id") or self.session
            body = resp.read()
        return json.loads(body) if body.strip() else None

    def _request(self, method, params):
        self.next_id += 1
        answer = self._post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def call(self, tool, **arguments):
        """Calls a tool and returns its structuredContent."""
        result = self._request("tools/call", {"name": tool, "arguments": arguments})
        return result.get("structuredContent") or {}


def task():
    """The task, as SSHRIG_TASK_JSON gives it."""
    return json.loads(os.environ["SSHRIG_TASK_JSON"])


def log(*words):
    """Says what the agent does, on stderr (stdout is for the answer)."""
    print("agent:", *words, file=sys.stderr, flush=True)


def answer(t, category, retry, message, record_id=None):
    """Prints the final answer: the result contract and the record id."""
    out = {"ok": category == "succeeded", "category": category, "retry": retry,
           "operation": t["operation"], "correlation_id": t["correlation_id"], "message": message}
    if record_id:
        out["record_id"] = record_id
    print(json.dumps(out), flush=True)
