"""The runner SIGKILLed mid-run (a batch system's hard kill, an OOM of the host process): no
clean-up runs, the log is left `started` and the sample's container is left behind. The same
command resumes: the orphan is removed, every sample ends scored, and the headline counts them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from taskfactory import harbor_task

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]


def _containers(pid: int, *extra: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"label=rsr.owner-pid={pid}", *extra],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def test_a_sigkilled_runner_does_resume_with_the_same_command_and_count_every_sample(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "quick")
    harbor_task(suite, "slow", solve_sh="sleep 8\necho done > /app/out.txt\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "killed", "suites": [{"task": "rsr/harbor", "args": {"path": str(suite)}}],
                                    "epochs": 1, "reducers": ["mean"], "agent": "rsr/oracle", "retry_attempts": 0}))
    log_dir = tmp_path / "logs"
    command = [sys.executable, "-m", "rsr.cli.main", "eval", "run", str(spec), "--model", "mockllm/model",
               "--log-dir", str(log_dir)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "INSPECT_DISPLAY": "none"}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + 180
        while not _containers(proc.pid, "--filter", "status=running", "--filter", "label=rsr.task-name=slow"):
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the slow sample's sandbox never started"
            time.sleep(0.3)
        time.sleep(1)
        proc.kill()
        proc.wait()
        orphans = _containers(proc.pid)
        assert orphans  # SIGKILL: nothing cleaned up
        again = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
        assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
        assert "passed 100.0% of 2 runs" in " ".join(again.stdout.split())
        assert _containers(proc.pid) == []  # the next run removed what the killed one left
    finally:
        if proc.poll() is None:
            proc.kill()
        for container in _containers(proc.pid):
            subprocess.run(["docker", "rm", "-f", container], capture_output=True)
