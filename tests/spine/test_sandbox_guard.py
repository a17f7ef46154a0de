"""Inspect's `--sandbox PROVIDER` must not silently replace the sandbox an rsr task defines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rsr.errors import RsrError
from rsr.suites.sandbox_guard import check_provider


def test_check_provider_does_accept_the_tasks_own_or_a_docker_compatible_provider() -> None:
    check_provider("rsr-docker", "rsr-docker")
    check_provider("docker", "docker")  # `--sandbox docker` keeps a compose task's own file


def test_check_provider_rejects_a_replacement_naming_the_fix() -> None:
    with pytest.raises(RsrError, match=r"`--sandbox docker` replaces the task's image.*Drop --sandbox"):
        check_provider("rsr-docker", "docker")
    with pytest.raises(RsrError, match="--sandbox local"):
        check_provider("docker", "local")


def test_inspect_eval_rejects_sandbox_override_before_the_agent_or_tests_run(tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.agent import as_solver
    from inspect_ai.util import registry_create

    import rsr._registry  # noqa: F401
    from rsr.harness.null import null

    logs_existed = Path("/logs").exists()  # the sample's setup script runs on the host under `local`
    try:
        task = registry_create("task", "rsr/core", tasks="hello-world")
        (log,) = inspect_eval(task, solver=as_solver(null()), model="mockllm/model", sandbox="local",
                              display="none", log_dir=str(tmp_path))
    finally:
        if not logs_existed and Path("/logs").exists():
            shutil.rmtree("/logs", ignore_errors=True)
    (sample,) = log.samples or []
    # Refused before the agent: the error stays on the sample, and (a started sample ends scored)
    # its score is a 0 that names it; the hidden tests never ran on the host.
    assert sample.error is not None
    score = sample.scores["verifier"]
    assert score.value["passed"] == 0 and score.metadata["error"] == "sample_error"
    assert "integrity" not in score.metadata
    assert "its task defines 'rsr-docker'" in sample.error.message
    assert "`--sandbox local`" in sample.error.message
