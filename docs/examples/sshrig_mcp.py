"""A minimal MCP client for sshrig's example agents: standard library only.

The rig serves its MCP tools over streamable HTTP with JSON answers
(SSHRIG_MCP_URL), so one POST per message is the whole protocol. An agent
that launches servers instead can run SSHRIG_MCP_COMMAND, which speaks the
same over stdio.

A client made with elicit= declares MCP elicitation: in an approval case
the server then asks for the person's approval itself, in the middle of the
call that needs it, on the session's event stream, and elicit(params)
answers with {"action": "accept" | "decline" | "cancel"}. ask_person is
what a host that shows the question to its user does under the rig.
"""
import json
import os
import sys
import threading
import urllib.request


class Client:
    """One MCP session with the rig's server."""

    def __init__(self, url=None, elicit=None):
        self.url = url or os.environ["SSHRIG_MCP_URL"]
        self.session = None
        self.next_id = 0
        self._request("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}} if elicit else {},
            "clientInfo": {"name": "sshrig-example-agent", "version": "1"},
        })
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if elicit:
            # Open before the first call: the server asks only on a stream
            # that is open when it asks.
            req = urllib.request.Request(self.url, method="GET", headers={
                "Accept": "text/event-stream", "Mcp-Session-Id": self.session})
            stream = urllib.request.urlopen(req)
            threading.Thread(target=self._listen, args=(stream, elicit), daemon=True).start()

    def _listen(self, stream, elicit):
        """Answers what the server asks on the session's event stream."""
        with stream:
            data = []
            for raw in stream:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                elif not line and data:
                    msg, data = json.loads("\n".join(data)), []
                    if msg.get("method") == "elicitation/create" and "id" in msg:
                        self._post({"jsonrpc": "2.0", "id": msg["id"], "result": elicit(msg["params"])})

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


def ask_person(params):
    """Shows an elicitation to the person the rig plays; their answer."""
    req = urllib.request.Request(
        os.environ["SSHRIG_PERSON_URL"], data=json.dumps({"message": params["message"]}).encode(),
        method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


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
