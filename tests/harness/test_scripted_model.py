"""`rsr-scripted/<role>` is an Inspect model anywhere Inspect takes one (the entry point), offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_PROBE = """
import asyncio, json
from inspect_ai.model import get_model
m = get_model("rsr-scripted/agent", fixture="examples/scripted/hello-world.yaml")
out = asyncio.run(m.generate("Create a file /app/hello.txt"))
print(json.loads(out.completion)["analysis"])
print(out.usage.total_tokens > 0)
"""


def test_scripted_model_does_resolve_through_the_entry_point_without_network(tmp_path: Path) -> None:
    # A fresh interpreter that never imports rsr itself: Inspect must find the provider through
    # the `inspect_ai` entry point, as `inspect eval --model rsr-scripted/...` does.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "NO_PROXY": "*", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    proc = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split("\n")
    assert lines[0] == "No scripted solution for this task."  # outside a sample: the catch-all rule
    assert lines[1] == "True"
