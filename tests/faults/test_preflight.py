"""What a run checks before it starts: a task's needs the host cannot meet (said once, a
failure of such a task counted as infra), free disk (one line with the figures, exit non-zero,
nothing written), `--model none` (Inspect's name for a solver that calls no model)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from taskfactory import harbor_task

from rsr.harness.oracle import oracle
from rsr.sandbox.compose import engine_has_bridge
from rsr.suites.inspect_tasks import tasks_task

REPO = Path(__file__).resolve().parents[2]

ONLINE_TOML = """
schema_version = "1.1"
[task]
name = "test/{name}"
[verifier]
timeout_sec = 30
[agent]
timeout_sec = 60
[environment]
workdir = "/app"
allow_internet = true
"""


@pytest.mark.docker
def test_a_task_that_needs_the_internet_on_a_sandbox_without_one_is_said_once_and_counted_as_infra(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Its tests fetch what they need, as real TB2 tasks do in test.sh: without a network they fail.
    harbor_task(tmp_path, "online", toml=ONLINE_TOML.format(name="online"),
                test_sh="mkdir -p /logs/verifier\ncurl -sf https://pypi.org/simple/ >/dev/null 2>&1 && "
                        "echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    harbor_task(tmp_path, "offline")
    with caplog.at_level(logging.WARNING):
        task = tasks_task("harbor", tmp_path, None, None, network="none")
    lines = [r.getMessage() for r in caplog.records if "need what this run lacks" in r.getMessage()]
    assert len(lines) == 1 and "(network:" in lines[0] and "online" in lines[0] and "offline" not in lines[0]
    (log,) = inspect_eval(task, solver=oracle(), model="mockllm/model", display="none", log_dir=str(tmp_path / "logs"))
    scores = {str(s.id): s.scores["verifier"] for s in log.samples}
    assert scores["online"].value["passed"] == 0 and scores["online"].metadata["infra"]["kind"] == "network"
    assert scores["offline"].value["passed"] == 1 and "infra" not in scores["offline"].metadata


def test_the_network_need_is_decided_from_the_task_and_the_run_policy_alone() -> None:
    from rsr.sandbox.needs import unmet_needs

    class Env:
        memory_mb, storage_mb, model_fields_set = 2048, 10240, {"memory_mb"}

    online = {"task_allow_internet": True, "sandbox_network": "none", "network_policy": "task"}
    assert [n["kind"] for n in unmet_needs(online, Env(), 4096, 100, fetches=True)] == ["network"]
    assert unmet_needs(online, Env(), 4096, 100, fetches=False) == []  # tests that do not fetch
    assert unmet_needs({**online, "sandbox_network": "bridge"}, Env(), 4096, 100, fetches=True) == []
    assert [n["kind"] for n in unmet_needs({}, Env(), 1024, None)] == ["memory"]
    # The default storage is no declared need; a declared one the disk lacks is.
    Env.model_fields_set = {"storage_mb"}
    assert [n["kind"] for n in unmet_needs({}, Env(), 4096, 100)] == ["disk"]
    assert engine_has_bridge() in (True, False)


def _rsr(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rsr.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, timeout=300)


def test_eval_run_on_a_disk_without_room_is_one_line_with_the_figures_and_writes_nothing(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    done = _rsr("eval", "run", "core", "--model", "mockllm/model", "--agent", "rsr/null", "--log-dir", str(logs),
                "-T", "tasks=hello-world", env={"RSR_DISK_NEED_MB": str(10**9)})
    assert done.returncode != 0
    text = (done.stdout + done.stderr).strip()
    assert "Traceback" not in text
    line = next(x for x in text.splitlines() if "not enough disk space" in x)
    assert "MB free" in line and "log dir" in line and "RSR_DISK_NEED_MB" in line
    assert not list(logs.glob("*.eval"))


def test_model_none_is_accepted_where_inspect_accepts_it() -> None:
    from rsr.report.evalset import check_model

    check_model("none")
    with pytest.raises(Exception, match="expected PROVIDER/MODEL"):
        check_model("gpt4")


