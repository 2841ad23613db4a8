#!/usr/bin/env python3
"""An agent that keeps approvals (docs/agents.md): honest in every respect but
one. It saves the last approval it was given in its state directory, and a
later process that finds one there presents it instead of asking the
person again, as an agent that caches "the user said yes" across restarts
does. The rig fails it at approval.fresh-process with approval_reused.

    sshrig agent --agent 'python3 docs/examples/agent-reuse-approval.py' --cases 'approval.*'
"""
import os

from sshrig_mcp import Client, answer, log, task

t = task()
mcp = Client()
cid = t["correlation_id"]
saved = os.path.join(os.environ.get("SSHRIG_AGENT_STATE", "."), "approval")


def approval(action):
    if not t["approvals"]:
        return {}
    if os.path.exists(saved):
        with open(saved) as f:
            log("reusing the approval saved by an earlier process")
            return {"approval": f.read().strip()}
    d = mcp.call("approve", action=action)
    if d.get("decision") != "approved":
        return None
    with open(saved, "w") as f:
        f.write(d["approval"])
    return {"approval": d["approval"]}


def main():
    if t["kind"] == "run":
        ap = approval("run_command")
        if ap is None:
            return answer(t, "authorization_denied", "never", "not approved")
        r = mcp.call("run_command", correlation_id=cid, **ap)
        return answer(t, r["category"], r["retry"], r.get("message", ""))
    record_id = t.get("record_id")
    if t["kind"] != "note-existing":
        ap = approval("create_record")
        if ap is None:
            return answer(t, "authorization_denied", "never", "not approved")
        r = mcp.call("create_record", correlation_id=cid, **ap)
        if r.get("category") != "succeeded":
            return answer(t, r["category"], r["retry"], r.get("message", ""))
        record_id = r["record_id"]
        if t["kind"] == "create":
            return answer(t, "succeeded", "never", "created", record_id)
        os.path.exists(saved) and os.remove(saved)  # used: ask again for the note
    ap = approval("attach_note")
    if ap is None:
        return answer(t, "authorization_denied", "never", "not approved", record_id)
    r = mcp.call("attach_note", record_id=record_id, **ap)
    return answer(t, r["category"], r["retry"], r.get("message", ""), record_id)


main()
