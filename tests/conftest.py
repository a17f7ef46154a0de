"""Shared fixtures. Docker tests run for real; CI sets RSR_REQUIRE_DOCKER=1 so that a missing
engine fails the run instead of silently skipping the sandbox tests."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")


def _docker_ok() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _docker_ok():
        return
    if os.environ.get("RSR_REQUIRE_DOCKER") == "1":
        raise pytest.UsageError("RSR_REQUIRE_DOCKER=1 but no Docker engine answers; run `rsr doctor --fix`")
    skip = pytest.mark.skip(reason="no Docker engine (run `rsr doctor --fix`)")
    for item in items:
        if "docker" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def engine_env() -> object:
    """The vLLM engine environment. Without it the test skips naming the setup command; CI sets
    RSR_REQUIRE_ENGINE=1 (scripts/test.sh), where a missing environment fails instead."""
    from rsr.engine.env import find_engine, missing_message

    env = find_engine()
    if env is None:
        if os.environ.get("RSR_REQUIRE_ENGINE") == "1":
            pytest.fail(f"RSR_REQUIRE_ENGINE=1 but {missing_message()}")
        pytest.skip(missing_message())
    return env
