"""Tasks whose deliverable is a running process (tasks/live): the reference solution passes and
the null agent fails, for real in Docker, with each task verified in its declared isolation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval

from rsr.harness.null import null
from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task
from rsr.tasks.load import load_dataset

LIVE = Path(__file__).resolve().parents[2] / "tasks" / "live"


def test_live_tasks_declare_their_isolation() -> None:
    loaded = load_dataset(LIVE, None, None)
    assert not loaded.errors
    isolation = {t.name: t.config.verifier.isolation for t in loaded.tasks}
    assert isolation == {"http-service": "snapshot", "heartbeat-daemon": "live"}


def run(solver: Any, tmp_path: Path, integrity: str = "auto") -> dict[str, Any]:
    logs = inspect_eval(tasks_task("live", LIVE, None, None, integrity=integrity), solver=solver,
                        model="mockllm/model", display="none", log_dir=str(tmp_path))
    assert logs[0].status == "success", logs[0].error
    return {str(s.id): s for s in logs[0].samples or []}


@pytest.mark.docker
def test_live_tasks_pass_with_their_reference_solution_and_fail_under_null(tmp_path: Path) -> None:
    # warn: the tests run beside the live deliverable, as Harbor runs them (under strict no agent
    # process may live while the tests run, so strict refuses these passes: test_verifier_attacks).
    solved = run(oracle(), tmp_path / "oracle", integrity="warn")
    idle = run(null(), tmp_path / "null")
    assert set(solved) == set(idle) == {"http-service", "heartbeat-daemon"}
    declared = {"http-service": "snapshot", "heartbeat-daemon": "live"}
    for name, s in solved.items():
        assert s.scores["verifier"].value["passed"] == 1, (name, s.scores["verifier"].explanation)
        # the score records the isolation the task was verified in
        assert s.scores["verifier"].metadata["integrity"]["isolation"] == declared[name]
    for name, s in idle.items():
        assert s.scores["verifier"].value["passed"] == 0, (name, s.scores["verifier"].explanation)
        assert "FAIL" in s.scores["verifier"].explanation
