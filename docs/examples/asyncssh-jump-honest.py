#!/usr/bin/python3
"""asyncssh-jump-honest.py: run one command with asyncssh on a host behind a
jump host (asyncssh's tunnel=), and report honestly what happened, as one
result object (docs/result.schema.json) on stdout.

Use it as a tool under test:
  sshrig run --jump --tool 'exec:docs/examples/asyncssh-jump-honest.py'
It reads its target from SSHRIG_* variables (docs/tool-contract.md) and needs
Debian's python3-asyncssh (apt-get install python3-asyncssh).

What it knows, and from where (asyncssh's session callbacks):
  connection_made        the session channel is open: the exec request leaves
                         right after it, so from here on the command may run
  exit_status_received   the server's exit status arrived: a result
  exit_signal_received   the server said the command died by a signal
A session that ends between the first and the others leaves the outcome
unknown: reconcile (read the remote state) before any retry.

Keepalives on both connections (keepalive_interval): the tunnel's own
connection to the target runs inside the jump host's, so a target that dies
behind a live jump host is noticed only by the target's keepalives, which
time out after about 3 s. Without them only the overall deadline ends such
a session; asyncssh alone waits for a target whose jump host still answers
(ronf/asyncssh#471).
"""

import asyncio
import json
import os
import sys
import warnings

warnings.simplefilter("ignore")  # cryptography's deprecation notes on import
import asyncssh  # noqa: E402


def report(category, retry, message):
    print(json.dumps({
        "ok": category == "succeeded",
        "category": category,
        "operation": os.environ.get("SSHRIG_OPERATION", ""),
        "retry": retry,
        "correlation_id": os.environ.get("SSHRIG_CORRELATION_ID", ""),
        "message": message,
    }))


class Session(asyncssh.SSHClientSession):
    """Records what the server said, as it said it."""

    def __init__(self, state):
        self.state = state

    def connection_made(self, chan):
        self.state["sent"] = True

    def exit_status_received(self, status):
        self.state["status"] = status

    def exit_signal_received(self, signal, core_dumped, msg, lang):
        self.state["signal"] = signal


def split_hostport(hostport):
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


async def attempt(state):
    env = os.environ
    jump_user, _, jump = env["SSHRIG_JUMP"].partition("@")
    jump_host, jump_port = split_hostport(jump)
    common = {
        "known_hosts": env["SSHRIG_KNOWN_HOSTS"],
        "client_keys": [env["SSHRIG_IDENTITY"]],
        "agent_path": None,
        "keepalive_interval": 1,
        "keepalive_count_max": 2,
    }
    async with asyncssh.connect(jump_host, jump_port, username=jump_user, **common) as tunnel:
        async with asyncssh.connect(env["SSHRIG_HOST"], int(env["SSHRIG_PORT"]), tunnel=tunnel,
                                    username=env["SSHRIG_USER"], **common) as conn:
            chan, _ = await conn.create_session(lambda: Session(state), env["SSHRIG_COMMAND"])
            await chan.wait_closed()


def main():
    for v in ("SSHRIG_JUMP", "SSHRIG_HOST", "SSHRIG_PORT", "SSHRIG_USER", "SSHRIG_IDENTITY",
              "SSHRIG_KNOWN_HOSTS", "SSHRIG_CORRELATION_ID", "SSHRIG_OPERATION", "SSHRIG_COMMAND",
              "SSHRIG_DEADLINE_MS"):
        if not os.environ.get(v):
            report("local_failure", "never", "missing %s; nothing was sent" % v)
            return 2
    # The whole attempt ends within the deadline: a second stays for reporting.
    budget = max(int(os.environ["SSHRIG_DEADLINE_MS"]) / 1000 - 1, 1)
    state = {"sent": False, "status": None, "signal": None}
    err = None
    try:
        asyncio.run(asyncio.wait_for(attempt(state), budget))
    except (OSError, asyncssh.Error, asyncio.TimeoutError) as e:
        err = e
    print("asyncssh-jump-honest: %s" % (err or "done"), file=sys.stderr)

    if state["signal"]:
        report("confirmed_failure", "never", "the server reported the remote command killed by signal %s" % state["signal"])
    elif state["status"] is not None:
        if state["status"] == 0:
            report("succeeded", "never", "the remote command exited 0")
        else:
            report("confirmed_failure", "never", "the remote command exited %d" % state["status"])
    elif isinstance(err, asyncssh.ChannelOpenError) and state["sent"]:
        # The channel opened and the server answered the exec with a refusal.
        report("authorization_denied", "never", "the server refused to run the command; nothing was run")
    elif state["sent"]:
        report("outcome_unknown", "reconcile_first",
               "the exec request was sent and no exit status arrived (%s); the command may have run: reconcile before retrying" % (err or "the session closed"))
    elif isinstance(err, asyncssh.PermissionDenied):
        report("authentication_failed", "never", "a host rejected the key; nothing was run")
    elif isinstance(err, asyncssh.HostKeyNotVerifiable):
        report("local_failure", "never", "a host key does not match known_hosts; nothing was sent")
    else:
        report("local_failure", "bounded", "failed before the exec request was sent (%s); nothing ran" % (err or "no session"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
