# An agent that never answers: it starts a child in its process group and
# waits for ever. The rig must stop both at the case's budget.
import subprocess
import sys
import time

subprocess.Popen(["sh", "-c", "sleep 300; :", sys.argv[1] if len(sys.argv) > 1 else "mute-child"])
print("agent: thinking", file=sys.stderr, flush=True)
while True:
    time.sleep(60)
