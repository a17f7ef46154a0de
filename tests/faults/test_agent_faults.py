"""Faults that are the agent's, or the task's tests', and must stay so: an agent whose
processes outgrow the task's memory (OOM) and tests that hang past the verifier's timeout. Both
end scored, as failures, never as infrastructure errors, and the run neither hangs nor crashes."""

from __future__ import annotations

import time
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from taskfactory import harbor_task

from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

SMALL_MEMORY = """
schema_version = "1.1"
[task]
name = "test/{name}"
[verifier]
timeout_sec = {verifier_timeout}
[agent]
timeout_sec = 60
[environment]
workdir = "/app"
memory_mb = 64
"""
# The shell keeps the whole capture in memory: 512 MB of it in a 64 MB container.
HOG = "v=$(head -c 536870912 /dev/zero | tr '\\0' a)\necho done > /app/out.txt\n"


@pytest.fixture(scope="module")
def agent_faults(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, float]:
    root = tmp_path_factory.mktemp("agentfaults")
    harbor_task(root, "oom", toml=SMALL_MEMORY.format(name="oom", verifier_timeout=30), solve_sh=HOG,
                test_sh="mkdir -p /logs/verifier; test -f /app/out.txt && echo 1 > /logs/verifier/reward.txt "
                        "|| echo 0 > /logs/verifier/reward.txt\n")
    harbor_task(root, "hung-tests", toml=SMALL_MEMORY.format(name="hung-tests", verifier_timeout=3),
                test_sh="sleep 600\n")
    started = time.monotonic()
    (log,) = inspect_eval(tasks_task("harbor", root, None, None), solver=oracle(), model="mockllm/model",
                          display="none", log_dir=str(root / "logs"))
    return log, time.monotonic() - started


def test_an_agent_that_runs_out_of_memory_does_fail_as_its_own_not_as_infra(agent_faults: tuple[Any, float]) -> None:
    log, _ = agent_faults
    sample = next(s for s in log.samples if s.id == "oom")
    score = sample.scores["verifier"]
    # The kernel killed the hog inside the container (exit 137); the agent's work is incomplete.
    assert score.value["passed"] == 0 and "infra" not in score.metadata
    assert sample.error is None


def test_tests_that_hang_do_end_at_the_verifier_timeout_as_a_failure(agent_faults: tuple[Any, float]) -> None:
    log, took = agent_faults
    score = next(s for s in log.samples if s.id == "hung-tests").scores["verifier"]
    assert score.value["passed"] == 0 and "infra" not in score.metadata
    assert "timeout" in str(score.metadata.get("error")) or "timed out" in (score.explanation or "")
    assert took < 120  # the run went on: neither the hang nor the OOM held it
    metrics = {f"{s.name}/{k.removeprefix('rsr/')}": m.value for s in log.results.scores for k, m in s.metrics.items()}
    assert (metrics["passed/mean"], metrics["passed/infra_errors"]) == (0.0, 0.0)
