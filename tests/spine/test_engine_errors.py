"""No Docker engine: `inspect eval` and `rsr factory run` end in one or two lines naming the fix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # Nothing listens on the discard port: the engine the client is pointed at does not answer.
    env = {**os.environ, "DOCKER_HOST": "tcp://127.0.0.1:9", "INSPECT_DISPLAY": "plain",
           "COLUMNS": "200"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _assert_short(proc: subprocess.CompletedProcess[str]) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Traceback" not in out, out[-3000:]
    error = [ln for ln in out.splitlines() if "no Docker engine answers" in ln]
    assert error, out[-3000:]
    assert "tcp://127.0.0.1:9: connection refused; start that engine or unset DOCKER_HOST" in error[0]


def test_inspect_eval_does_report_a_missing_engine_in_one_line(tmp_path: Path) -> None:
    _assert_short(_run([str(BIN / "inspect"), "eval", "rsr/core", "-T", "tasks=hello-world",
                        "--solver", "rsr/oracle", "--model", "mockllm/model", "--log-dir",
                        str(tmp_path / "logs")], tmp_path))


def test_factory_run_does_report_a_missing_engine_in_one_line(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples/factory-smoke", tmp_path / "factory-smoke")
    shutil.copy(REPO / "examples/factory-smoke.yaml", tmp_path)
    proc = _run([str(BIN / "rsr"), "factory", "run", "factory-smoke.yaml", "--output-dir", "out"],
                tmp_path)
    assert proc.returncode == 2
    _assert_short(proc)

