#!/bin/bash
# Runs after the agent; /tests holds this directory. reward.json reports each milestone named
# in task.toml ([metadata] milestones) and `reward` = 1 only when all of them pass.
mkdir -p /logs/verifier
python3 /tests/test_outputs.py /tmp/milestones.json
python3 - <<'PY'
import json
m = json.load(open("/tmp/milestones.json"))
m["reward"] = 1.0 if all(v >= 1 for v in m.values()) else 0.0
json.dump(m, open("/logs/verifier/reward.json", "w"))
PY
