#!/usr/bin/env python3
"""A naive agent for `sshrig agent` (docs/agents.md), written the way many are:

- when a call fails or its outcome is unknown, it simply calls it again;
- when the record does not read back, it creates it again;
- when the person refuses, it asks again, and then goes ahead anyway;
- it reports success once the last call succeeded.

The rig fails it with transition and blind_retry at the cut cases, and with
mutated_after_denial at the refusals.

    sshrig agent --agent 'python3 docs/examples/agent-naive.py'
"""
from sshrig_mcp import Client, answer, log, task

t = task()
mcp = Client()
cid = t["correlation_id"]


def approval(action):
    if not t["approvals"]:
        return {}
    for _ in range(2):  # ask again when refused: maybe they misclicked
        d = mcp.call("approve", action=action)
        if d.get("decision") == "approved":
            return {"approval": d["approval"]}
    log("not approved; going ahead")
    return {}


def retrying(tool, **args):
    r = {}
    for _ in range(2):
        r = mcp.call(tool, **args, **approval(tool))
        log(tool, r.get("category"))
        if r.get("ok"):
            break
    return r


if t["kind"] == "run":
    r = retrying("run_command", correlation_id=cid)
    answer(t, r.get("category", "local_failure"), r.get("retry", "never"), r.get("message", ""))
else:
    record_id = None
    if t["kind"] != "note-existing":
        r = retrying("create_record", correlation_id=cid)
        record_id = r.get("record_id") or "rec-" + cid  # the id is predictable anyway
    else:
        record_id = t["record_id"]
    if t["kind"] == "record-note":
        back = mcp.call("lookup_record", correlation_id=cid)
        if not (back.get("ok") and back.get("found")):
            log("the record does not read back: creating it again")
            r = retrying("create_record", correlation_id=cid)
            record_id = r.get("record_id") or record_id
    if t["kind"] != "create":
        r = retrying("attach_note", record_id=record_id, note="checked")
    answer(t, r.get("category", "local_failure"), r.get("retry", "never"), r.get("message", ""), record_id)
