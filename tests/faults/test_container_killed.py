"""A container killed mid-agent (`docker kill`, as an operator or a node's OOM reaper does):
the sample ends scored, as an infra failure of kind `sandbox-lost`, and Inspect's own headline
counts it (Harbor's accounting: 1 of 2, not 1 of 1)."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from taskfactory import harbor_task

from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

SLOW = "sleep 6\necho done > /app/out.txt\n"


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


def _run(root: Path, **options: Any) -> tuple[Any, list[str]]:
    harbor_task(root, "fast")
    harbor_task(root, "slow", solve_sh=SLOW)
    harbor_task(root, "wrong", solve_sh="echo nope > /app/out.txt\n")
    stop, killed = threading.Event(), []
    watcher = threading.Thread(target=_kill_when_running, args=("slow", stop, killed), daemon=True)
    watcher.start()
    try:
        logs = inspect_eval(tasks_task("harbor", root, None, None), solver=oracle(), model="mockllm/model",
                            display="none", log_dir=str(root / "logs"), **options)
    finally:
        stop.set()
    return logs[0], killed


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[str]]:
    return _run(tmp_path_factory.mktemp("killed"))


@pytest.fixture(scope="module")
def retried_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[str]]:
    return _run(tmp_path_factory.mktemp("retried"), retry_on_error=1)


def test_a_container_killed_mid_agent_does_end_scored_as_sandbox_lost(killed_run: tuple[Any, list[str]]) -> None:
    log, killed = killed_run
    assert killed, "the slow task's container was never seen running"
    samples = {str(s.id): s for s in log.samples}
    assert set(samples) == {"fast", "slow", "wrong"}
    slow = samples["slow"].scores["verifier"]
    assert slow.value["passed"] == 0
    assert slow.metadata["infra"]["kind"] == "sandbox-lost", slow.metadata
    assert samples["fast"].scores["verifier"].value["passed"] == 1
    m = metrics_of(log)
    # Inspect's own headline (what `inspect eval` and `inspect view` print): 1 of 2.
    assert abs(m["passed/mean"] - 1 / 3) < 1e-9 and m["passed/infra_errors"] == 1
    assert m["passed/passed_excl_infra"] == 0.5 and m["passed/infra_sandbox-lost"] == 1


def test_reports_do_count_the_lost_container_once_as_infra(killed_run: tuple[Any, list[str]]) -> None:
    from rsr.report.logs import read_run
    from rsr.report.metrics import headline

    m = read_run(Path(killed_run[0].location)).metrics(k=1)
    assert (m.n_infra, m.infra_by_kind, m.n_errors, m.n_retried) == (1, {"sandbox-lost": 1}, 0, 0)
    assert headline(m).startswith("passed 33.3% of 3 runs; infra errors 1 (sandbox-lost 1)")


def test_a_retried_infra_failure_does_keep_every_attempt_and_is_marked(retried_run: tuple[Any, list[str]]) -> None:
    from rsr.report.logs import read_run
    from rsr.report.metrics import headline

    log, killed = retried_run
    assert killed
    samples = {str(s.id): s for s in log.samples}
    slow = samples["slow"]
    # The second attempt ran in a fresh container and passed; the first attempt's error is logged.
    assert slow.scores["verifier"].value["passed"] == 1 and slow.scores["verifier"].metadata["attempts"] == 2
    assert len(slow.error_retries) == 1 and "sandbox" in slow.error_retries[0].message
    # A sample the agent failed is a verdict, not an error: never retried.
    assert samples["wrong"].scores["verifier"].value["passed"] == 0 and not samples["wrong"].error_retries
    m = read_run(Path(log.location)).metrics(k=1)
    assert (m.n_infra, m.n_retried) == (0, 1)
    assert "retried 1 (after an infra failure)" in headline(m)
