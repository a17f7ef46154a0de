"""The expected totals are fixed here, not recomputed from a file the agent could edit."""

import json
import sys

EXPECTED = {"east": 79.5, "north": 13.25, "south": 10.0, "west": 3.1}

try:
    with open("/app/report.json") as f:
        report = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"no readable /app/report.json: {e}")
if not isinstance(report, dict) or set(report) != set(EXPECTED):
    sys.exit(f"regions {sorted(report) if isinstance(report, dict) else report!r}, expected {sorted(EXPECTED)}")
wrong = {k: report[k] for k in EXPECTED if not isinstance(report[k], (int, float))
         or abs(report[k] - EXPECTED[k]) > 0.005}
if wrong:
    sys.exit(f"wrong totals: {wrong}")
print("ok")
