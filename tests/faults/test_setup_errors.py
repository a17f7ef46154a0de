"""Failures before the agent: an image whose Dockerfile ends in `USER nobody` (Inspect's own
setup step could not run there, and the sample fell out of Inspect's headline), and a task
whose healthcheck never passes (the environment's failure: infra `setup`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from taskfactory import harbor_task

from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

UNHEALTHY = """
schema_version = "1.1"
[task]
name = "test/unhealthy"
[verifier]
timeout_sec = 30
[agent]
timeout_sec = 60
[environment]
workdir = "/app"
[environment.healthcheck]
command = "test -f /never-there"
interval_sec = 0.2
timeout_sec = 2
retries = 1
"""


@pytest.fixture(scope="module")
def setup_log(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("setup")
    harbor_task(root, "nobody", dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nUSER nobody\n")
    harbor_task(root, "unhealthy", toml=UNHEALTHY)
    harbor_task(root, "ok")
    (log,) = inspect_eval(tasks_task("harbor", root, None, None), solver=oracle(), model="mockllm/model",
                          display="none", log_dir=str(root / "logs"))
    return log


def test_a_user_nobody_image_does_run_and_count_in_inspects_headline(setup_log: Any) -> None:
    samples = {str(s.id): s for s in setup_log.samples}
    nobody = samples["nobody"]
    # Harbor's log dirs were made as root; the oracle ran as the image's user (who cannot write
    # the root-owned /app): a verdict on the agent, not an error and not infra.
    assert nobody.error is None and "infra" not in nobody.scores["verifier"].metadata
    assert [m for m in nobody.messages if m.role == "assistant"]
    metrics = {f"{s.name}/{k.removeprefix('rsr/')}": m.value for s in setup_log.results.scores
               for k, m in s.metrics.items()}
    assert abs(metrics["passed/mean"] - 1 / 3) < 1e-9  # ok passes; nobody and unhealthy count 0


def test_a_healthcheck_that_never_passes_does_end_as_infra_setup_before_the_agent(setup_log: Any) -> None:
    sample = next(s for s in setup_log.samples if s.id == "unhealthy")
    score = sample.scores["verifier"]
    assert score.value["passed"] == 0 and score.metadata["infra"]["kind"] == "setup"
    assert "healthcheck failed" in score.metadata["infra"]["message"]
    assert not [m for m in sample.messages if m.role == "assistant"]  # no agent ran


def test_the_setup_script_is_not_inspects_so_it_never_runs_before_the_sandbox_check(tmp_path: Path) -> None:
    harbor_task(tmp_path, "one")
    sample = tasks_task("harbor", tmp_path, None, None).dataset[0]
    assert sample.setup is None and "mkdir -p /logs/agent" in sample.metadata["rsr_setup"]
