#!/usr/bin/env python3
"""python-honest.py: run one command over OpenSSH's ssh and report honestly
what happened, as one result object (docs/result.schema.json) on stdout.

Use it as a tool under test:  sshrig run --tool 'exec:docs/examples/python-honest.py'
It reads its target from SSHRIG_* variables (docs/tool-contract.md) and
needs nothing beyond Python's standard library and OpenSSH's ssh.

It is ssh-honest.sh written the way a Python tool is: started through
/usr/bin/env, an interpreter that spends CPU before it connects. ssh's exit
status cannot tell a failed ssh from a remote command that exited 255, nor a
lost status from anything, so the tool reads ssh's debug log (-v) instead:
  "Sending command: ..."   the exec request is about to leave: from here on
                           the command may run remotely
  "Exit status N"          the server's exit status arrived: a result.
                           ssh also logs "Exit status -1" when NO status
                           arrived (the session ended without one): that is
                           no result at all.
  "rtype exit-signal"      the server said the command died by a signal
"""

import json
import os
import re
import subprocess
import sys
import time

STARTED = time.monotonic()

REQUIRED = ("SSHRIG_HOST", "SSHRIG_PORT", "SSHRIG_USER", "SSHRIG_IDENTITY", "SSHRIG_KNOWN_HOSTS",
            "SSHRIG_CORRELATION_ID", "SSHRIG_OPERATION", "SSHRIG_COMMAND", "SSHRIG_DEADLINE_MS")

RECORD = re.compile(r'\{"records":\[\{"id":"[^"\\]+","status":"created"\}\]\}')
EXIT_STATUS = re.compile(r"^debug1: Exit status (-?\d+)", re.MULTILINE)


def report(category, retry, message):
    print(json.dumps({
        "ok": category == "succeeded",
        "category": category,
        "operation": os.environ.get("SSHRIG_OPERATION", ""),
        "retry": retry,
        "correlation_id": os.environ.get("SSHRIG_CORRELATION_ID", ""),
        "message": message,
    }, separators=(",", ":")))


def contract_ok(operation, out):
    """An answer is used only if it meets the operation's contract:
    create_record prints exactly one record with a string id."""
    if operation == "create_record":
        line, newline, rest = out.decode("utf-8", "replace").partition("\n")
        return newline == "\n" and rest == "" and RECORD.fullmatch(line) is not None
    return True


def classify(rc, out, log):
    statuses = [int(s) for s in EXIT_STATUS.findall(log) if int(s) >= 0]
    if statuses:
        status = statuses[-1]
        if status == 0 and not contract_ok(os.environ["SSHRIG_OPERATION"], out):
            return ("malformed_response", "never",
                    "the remote command exited 0 but its answer breaks the %s contract; nothing may be built on it"
                    % os.environ["SSHRIG_OPERATION"])
        if status == 0:
            return ("succeeded", "never", "the remote command exited 0")
        return ("confirmed_failure", "never", "the remote command exited %d" % status)
    if "rtype exit-signal" in log:
        return ("confirmed_failure", "never", "the server reported the remote command killed by a signal")
    if "exec request failed on channel" in log:
        return ("authorization_denied", "never", "the server refused to run the command; nothing was run")
    if re.search(r"^debug1: Sending command: ", log, re.MULTILINE):
        return ("outcome_unknown", "reconcile_first",
                "the exec request was sent and no exit status arrived (ssh %s); the command may have run: "
                "reconcile before retrying" % rc)
    if "Permission denied" in log:
        return ("authentication_failed", "never", "the server rejected the key; nothing was run")
    if "Host key verification failed" in log:
        return ("local_failure", "never", "the server's host key does not match known_hosts; nothing was sent")
    if re.search(r"open failed: resource.shortage", log):
        return ("rate_limited", "after_delay", "the server refused the session for lack of resources; nothing was run")
    return ("local_failure", "bounded", "ssh failed before sending the command (%s); nothing ran" % rc)


def main():
    missing = [v for v in REQUIRED if not os.environ.get(v)]
    if missing:
        report("local_failure", "never", "missing %s; nothing was sent" % ", ".join(missing))
        return 2
    env = os.environ
    # The whole attempt must end within the caller's deadline, counted from
    # this program's start: keep a second for reporting. ServerAliveInterval
    # and CountMax end a session whose server stopped answering.
    deadline = int(env["SSHRIG_DEADLINE_MS"]) / 1000.0
    budget = max(1.0, deadline - 1.0 - (time.monotonic() - STARTED))
    argv = ["ssh", "-v", "-F", "/dev/null", "-n", "-T", "-a", "-x",
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=" + env["SSHRIG_IDENTITY"],
            "-o", "UserKnownHostsFile=" + env["SSHRIG_KNOWN_HOSTS"], "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes", "-o", "CheckHostIP=no", "-o", "UpdateHostKeys=no",
            "-o", "ConnectTimeout=2", "-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=2",
            "-o", "ControlMaster=no", "-o", "ControlPath=none",
            "-p", env["SSHRIG_PORT"], "-l", env["SSHRIG_USER"], env["SSHRIG_HOST"], env["SSHRIG_COMMAND"]]
    try:
        # ssh leads its own session so that a timeout kills it and nothing
        # of it outlives the attempt.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        report("local_failure", "bounded", "cannot start ssh (%s); nothing was sent" % e)
        return 1
    try:
        out, err = proc.communicate(timeout=budget)
        rc = "exited %d" % proc.returncode if proc.returncode >= 0 else "killed by signal %d" % -proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        rc = "killed after %.1fs, the budget" % budget
    log = err.decode("utf-8", "replace")
    # Diagnostics for people go to stderr; the caller reads only stdout.
    sys.stderr.write(log)
    sys.stderr.write("python-honest: ssh %s\n" % rc)
    report(*classify(rc, out, log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
