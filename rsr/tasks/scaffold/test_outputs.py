"""Hidden tests: run the deliverable on fresh inputs and recompute the answer here, so no fixed
answer passes and the deliverable never sees what is expected of it."""

import collections
import os
import random
import subprocess
import sys

sys.path.insert(0, "/tests")  # python3 -I leaves this directory off sys.path
import rsr_check as rc  # noqa: E402

rc.lockdown()  # from here /tests and /logs/verifier are root-only; the checker writes with umask 077
rc.expose("/app")  # the agent's files, readable by the deliverable's user (nobody)
work = rc.scratch()  # a directory of nobody's for the inputs; expected outputs stay in memory
rng = random.Random(7)
counted = reported = True
for case in range(5):
    words = [rng.choice(["pear", "apple", "fig", "kiwi", "plum"]) for _ in range(rng.randint(1, 60))]
    path = rc.put(os.path.join(work, f"words{case}.txt"), "\n".join(words) + "\n")
    counts = collections.Counter(words)
    expected = [f"{w} {c}" for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    try:
        # As nobody, clean environment, own session, timeout; output captured.
        r = rc.run(["/app/wordcount", path], timeout=30)
        lines = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"FAIL case {case}: {e}")
        lines = []
    counted &= sorted(lines) == sorted(expected)
    reported &= lines == expected
results = {"counted": int(counted), "reported": int(reported)}
reward = int(all(results.values()))
print(results)
# Kills whatever the deliverable left running, then writes reward.json (milestones) or reward.txt.
rc.write_reward(reward, results if "--milestones" in sys.argv else None)
sys.exit(0 if reward else 1)
