"""A container killed mid-agent (`docker kill`, as an operator or a node's OOM reaper does):
the sample ends scored, as an infra failure of kind `sandbox-lost`, and Inspect's own headline
counts it (Harbor's accounting: 1 of 2, not 1 of 1)."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from taskfactory import harbor_task

from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

SLOW = "sleep 60\necho done > /app/out.txt\n"


def _kill_when_running(task_name: str, stop: threading.Event, killed: list[str]) -> None:
    """Kill the container of `task_name` once its agent has been running for a moment."""
    while not stop.is_set():
        out = subprocess.run(["docker", "ps", "-q", "--filter", f"label=rsr.task-name={task_name}"],
                             capture_output=True, text=True).stdout.split()
        if out:
            time.sleep(2)  # the oracle's solve.sh is in its sleep by now
            subprocess.run(["docker", "kill", *out], capture_output=True)
            killed.extend(out)
            return
        time.sleep(0.3)


def metrics_of(log: Any) -> dict[str, float]:
    return {f"{s.name}/{k.removeprefix('rsr/')}": m.value for s in log.results.scores for k, m in s.metrics.items()}


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[str]]:
    root = tmp_path_factory.mktemp("killed")
    harbor_task(root, "fast")
    harbor_task(root, "slow", solve_sh=SLOW)
    stop, killed = threading.Event(), []
    watcher = threading.Thread(target=_kill_when_running, args=("slow", stop, killed), daemon=True)
    watcher.start()
    try:
        logs = inspect_eval(tasks_task("harbor", root, None, None), solver=oracle(), model="mockllm/model",
                            display="none", log_dir=str(root / "logs"))
    finally:
        stop.set()
    return logs[0], killed


def test_a_container_killed_mid_agent_does_end_scored_as_sandbox_lost(killed_run: tuple[Any, list[str]]) -> None:
    log, killed = killed_run
    assert killed, "the slow task's container was never seen running"
    samples = {str(s.id): s for s in log.samples}
    assert set(samples) == {"fast", "slow"}
    slow = samples["slow"].scores["verifier"]
    assert slow.value["passed"] == 0
    assert slow.metadata["infra"]["kind"] == "sandbox-lost", slow.metadata
    assert samples["fast"].scores["verifier"].value["passed"] == 1
    m = metrics_of(log)
    # Inspect's own headline (what `inspect eval` and `inspect view` print): 1 of 2.
    assert m["passed/mean"] == 0.5 and m["passed/infra_errors"] == 1
    assert m["passed/passed_excl_infra"] == 1.0 and m["passed/infra_sandbox-lost"] == 1
