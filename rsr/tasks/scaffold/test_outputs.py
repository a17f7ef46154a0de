"""Hidden tests: recompute the expected answer from the input, so no fixed answer passes."""

import collections
import json
import pathlib
import sys

words = pathlib.Path("/app/data/words.txt").read_text().split()
counts = collections.Counter(words)
expected = [f"{w} {c}" for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
out = pathlib.Path("/app/counts.txt")
results = {"counted": 0.0, "reported": 0.0}
if out.is_file():
    lines = [ln.strip() for ln in out.read_text().splitlines() if ln.strip()]
    results["counted"] = float(sorted(lines) == sorted(expected))
    results["reported"] = float(lines == expected)
else:
    print(f"FAIL: {out} missing")
print(json.dumps(results))
if len(sys.argv) > 1:
    pathlib.Path(sys.argv[1]).write_text(json.dumps(results))
sys.exit(0 if all(results.values()) else 1)
