# An agent that answers in prose instead of the result contract.
from sshrig_mcp import Client, task

t = task()
Client().call("run_command" if t["kind"] == "run" else "lookup_record", correlation_id=t["correlation_id"])
print("All done! The record was created and noted.")
