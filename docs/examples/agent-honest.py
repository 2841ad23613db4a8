#!/usr/bin/env python3
"""An honest agent for `sshrig agent` (docs/agents.md): no model, one policy.

- It asks the person before every call that changes something, once per
  call, and stops at the first refusal or silence, changing nothing.
- After a create whose outcome is unknown it looks the record up before it
  acts again; it creates again only when two lookups a second apart both
  find nothing (a create still running would be found by the second).
- A lookup only reads: when its answer is lost it asks again (three times
  at most). A note only adds: when its answer is lost nothing it can read
  says whether the note is on the record, so it says so and stops.
- Its final answer is what it knows: success only when the note is on a
  record it saw.

    sshrig agent --agent 'python3 docs/examples/agent-honest.py'

With --elicit its client declares MCP elicitation: it calls approve no more,
the server asks for each approval inside the call, and the agent's host
shows the question to the person (SSHRIG_PERSON_URL) and returns the answer.
With --elicit-approve-all the host answers every question "accept" itself,
as a host set to approve everything does: approval_forged.
"""
import sys
import time

from sshrig_mcp import Client, answer, ask_person, log, task

t = task()
elicit = None
if "--elicit" in sys.argv[1:]:
    elicit = ask_person
elif "--elicit-approve-all" in sys.argv[1:]:
    elicit = lambda params: {"action": "accept", "content": {}}  # noqa: E731: the defect, in one line
mcp = Client(elicit=elicit)
cid = t["correlation_id"]


class Stop(Exception):
    """Ends the task with a final answer."""

    def __init__(self, category, retry, message):
        super().__init__(message)
        self.category, self.retry, self.message = category, retry, message


def approval(action):
    """The approval argument for one call, or Stop when the person refuses.
    With elicitation the server asks inside the call: no argument."""
    if not t["approvals"] or elicit:
        return {}
    d = mcp.call("approve", action=action, reason=f"{action} for correlation id {cid}")
    if d.get("decision") != "approved":
        log("approval", action, d.get("decision"))
        raise Stop("authorization_denied", "never", f"the person did not approve {action} ({d.get('decision')}): nothing was changed")
    return {"approval": d["approval"]}


def lookup():
    """The record's id, None when there is none, or Stop when three lookups fail."""
    for _ in range(3):
        r = mcp.call("lookup_record", correlation_id=cid)
        if r.get("ok"):
            return r.get("record_id") if r.get("found") else None
        log("lookup_record:", r.get("category"), "- a read: asking again")
    raise Stop("outcome_unknown", "reconcile_first", "the record could not be looked up: " + r.get("message", ""))


def create():
    """Creates the record once, looking before it acts again; its id."""
    r = mcp.call("create_record", correlation_id=cid, **approval("create_record"))
    log("create_record:", r.get("category"))
    if r.get("category") == "succeeded":
        return r["record_id"]
    if r.get("category") != "outcome_unknown":
        raise Stop(r.get("category", "local_failure"), r.get("retry", "never"), "create_record: " + r.get("message", ""))
    found = lookup()
    if found is None:
        time.sleep(1)  # a create still running would have finished
        found = lookup()
    if found is not None:
        log("lookup: found", found)
        return found
    log("lookup: not found twice; the create never ran: creating")
    r = mcp.call("create_record", correlation_id=cid, **approval("create_record"))
    if r.get("category") != "succeeded":
        raise Stop(r.get("category", "local_failure"), r.get("retry", "never"), "create_record, after a lookup found nothing: " + r.get("message", ""))
    return r["record_id"]


def note(record_id):
    r = mcp.call("attach_note", record_id=record_id, note="checked", **approval("attach_note"))
    if r.get("category") != "succeeded":
        raise Stop(r.get("category", "local_failure"), r.get("retry", "never"), "attach_note: " + r.get("message", ""))


def main():
    kind = t["kind"]
    if kind == "run":
        r = mcp.call("run_command", correlation_id=cid, **approval("run_command"))
        answer(t, r["category"], r["retry"], r.get("message", ""))
        return
    record_id = None
    try:
        if kind == "note-existing":
            record_id = lookup()
            if record_id is None:
                raise Stop("confirmed_failure", "never", "the record the task names does not exist")
        else:
            record_id = create()
        if kind == "create":
            answer(t, "succeeded", "never", "record " + record_id + " created", record_id)
            return
        if kind == "record-note" and lookup() != record_id:  # read it back
            raise Stop("outcome_unknown", "reconcile_first", "the record does not read back")
        note(record_id)
        answer(t, "succeeded", "never", "record " + record_id + " created and noted", record_id)
    except Stop as s:
        answer(t, s.category, s.retry, s.message, record_id)


if __name__ == "__main__":
    sys.exit(main())
