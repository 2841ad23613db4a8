# An agent that loops on calls: it looks the record up again and again.
from sshrig_mcp import Client, task

t = task()
mcp = Client()
while True:
    mcp.call("lookup_record", correlation_id=t["correlation_id"])
