"""Checks, through /proc, that exactly one detached /app/heartbeatd runs and keeps beating."""

import os
import re
import sys
import time

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# Nothing of the agent's is run here: the daemon is observed. lockdown() still closes /tests and
# the reward directory to unprivileged processes (in live isolation the agent's own root
# processes share this container: that mode cannot keep them out).
rc.lockdown()
LOG = "/var/log/heartbeat.log"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def daemons():
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if any(b"/app/heartbeatd" in a for a in argv) and fields[0] != "Z":
            found[int(entry)] = int(fields[3])  # session id
    return found


try:
    pid = int(open("/run/heartbeatd.pid").read().strip())
except (OSError, ValueError) as e:
    fail(f"/run/heartbeatd.pid missing or not a pid: {e}")
running = daemons()
if list(running) != [pid]:
    fail(f"expected exactly the process {pid} from the pid file to run /app/heartbeatd, found {sorted(running)}")
if running[pid] != pid:
    fail(f"process {pid} does not lead its own session (session {running[pid]})")


def lines():
    try:
        with open(LOG) as f:
            return f.read().splitlines()
    except OSError:
        return []


before = len(lines())
time.sleep(3.5)
after = lines()
new = after[before:]
if len(new) < 2:
    fail(f"{LOG} gained {len(new)} line(s) in 3.5 s; expected one a second")
now = time.time()
for line in new:
    m = re.fullmatch(r"(\d+) alive", line)
    if not m or abs(int(m.group(1)) - now) > 6:
        fail(f"bad heartbeat line {line!r}")
print("PASS: one detached daemon, beating")
