"""`--no-sandbox-cleanup`: the run says which container it kept, and the next run's sweep of
orphaned containers leaves that one alone until it is removed on purpose."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rsr.sandbox import engine

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.docker


def test_no_sandbox_cleanup_does_name_the_kept_container_and_the_sweep_leaves_it(tmp_path: Path) -> None:
    env = {**os.environ, "INSPECT_DISPLAY": "plain"}
    proc = subprocess.run([str(BIN / "inspect"), "eval", "rsr/core", "-T", "tasks=hello-world", "--solver",
                           "rsr/null", "--model", "mockllm/model", "--no-sandbox-cleanup", "--log-dir",
                           str(tmp_path)], env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    m = re.search(r"rsr-docker kept container (rsr-kept-hello-world-[0-9a-f]{12}) \(task hello-world\): "
                  r"docker exec -it \1 bash", " ".join(out.split()))
    assert m, out[-3000:]
    name = m.group(1)
    try:
        engine.remove_orphans()  # what the next run does first: its owner process is gone now
        (info,) = engine.api().containers(all=True, filters={"name": name})
        assert info["State"] == "running"
        rc = subprocess.run([str(BIN / "inspect"), "sandbox", "cleanup", "rsr-docker", name], env=env,
                            capture_output=True, text=True, timeout=120).returncode
        assert rc == 0
        assert not engine.api().containers(all=True, filters={"name": name})
    finally:
        engine.remove_container(name)
