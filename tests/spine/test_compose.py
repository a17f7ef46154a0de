"""Compose files of multi-container and TB1 tasks: Harbor's variables, no host paths, renamed
main service, per-sample log volumes, GPUs; the docker-marked tests bring the files up for real."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from docker_needs import unless
from taskfactory import PONG_SERVER, harbor_task, tb1_task

from rsr.errors import TaskFormatError
from rsr.sandbox.compose import (
    LOG_VOLUMES,
    MAIN_SERVICE,
    compose_differences,
    compose_spec,
    interpolate,
    write_compose_file,
)
from rsr.sandbox.sample_dirs import create_sample_dirs
from rsr.tasks.load import load_task

TOML = '[task]\nname = "test/{name}"\n[environment]\ncpus = 1\nmemory_mb = 512\nallow_internet = false\n' \
       'workdir = "/app"\n'

SIDECAR = f"""
services:
  main:
    depends_on:
      cache:
        condition: service_started
    environment:
      CACHE_HOST: cache
    volumes:
      - ${{HOST_VERIFIER_LOGS_PATH}}:${{ENV_VERIFIER_LOGS_PATH}}
      - ${{HOST_AGENT_LOGS_PATH}}:${{ENV_AGENT_LOGS_PATH}}
    deploy:
      resources:
        limits:
          cpus: ${{CPUS}}
          memory: ${{MEMORY}}
  cache:
    image: ${{MAIN_IMAGE_NAME}}
    command: ["sh", "-c", {json.dumps(PONG_SERVER)}]
    depends_on: [main]
"""


def sidecar_task(root: Path, name: str = "sidecar", compose: str = SIDECAR, toml: str | None = None) -> Path:
    return harbor_task(root, name, toml=toml or TOML.format(name=name),
                       extra={"environment/docker-compose.yaml": compose})


def test_interpolate_uses_only_rsr_values_and_escapes_dollars() -> None:
    unknown: set[str] = set()
    text = interpolate("${CPUS} $CPUS ${HOME} ${HOME:-/fallback} ${CPUS:+set} $$literal",
                       {"CPUS": "2"}, unknown)
    assert text == "2 2  /fallback set $$literal"
    assert unknown == {"HOME"}


def test_compose_spec_layers_a_sidecar_file_over_harbors_main_service(tmp_path: Path) -> None:
    spec = compose_spec(load_task(sidecar_task(tmp_path)), bridge=False)
    main, cache = spec["services"][MAIN_SERVICE], spec["services"]["cache"]
    assert "main" not in spec["services"] and main["x-default"] is True
    # Harbor's base: built from environment/, kept alive; the task file's keys on top.
    assert main["build"]["context"] == str(tmp_path / "sidecar" / "environment")
    assert main["build"]["network"] == "host" and main["command"] == ["sleep", "infinity"]
    assert main["environment"] == {"CACHE_HOST": "cache"}
    assert main["deploy"]["resources"]["limits"] == {"cpus": "1", "memory": "512M", "pids": 4096}
    assert cache["image"] == main["image"]
    # depends_on follows the rename; no network: everyone in main's namespace, names on loopback.
    assert cache["depends_on"] == [MAIN_SERVICE] and "depends_on" not in main
    assert main["network_mode"] == "none" and cache["network_mode"] == f"service:{MAIN_SERVICE}"
    assert "cache:127.0.0.1" in main["extra_hosts"] and "main:127.0.0.1" in main["extra_hosts"]
    assert set(spec["volumes"]) == {LOG_VOLUMES["verifier"], LOG_VOLUMES["agent"]}
    assert f"{LOG_VOLUMES['verifier']}:/logs/verifier" in main["volumes"]


def test_compose_spec_keeps_the_main_name_reachable_when_networked(tmp_path: Path) -> None:
    toml = TOML.format(name="online").replace("allow_internet = false", "allow_internet = true")
    spec = compose_spec(load_task(sidecar_task(tmp_path, "online", toml=toml)), bridge=True)
    main, cache = spec["services"][MAIN_SERVICE], spec["services"]["cache"]
    assert "network_mode" not in main and main["networks"]["default"]["aliases"] == ["main"]
    assert cache["depends_on"] == [MAIN_SERVICE]
    # The same task on an engine without a bridge network (this project's machines) is offline.
    offline = compose_spec(load_task(tmp_path / "online"), bridge=False)
    assert offline["services"][MAIN_SERVICE]["network_mode"] == "none"


def test_compose_spec_never_resolves_host_variables_into_mounts(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    compose = "services:\n  main:\n    volumes:\n      - ${DATA_DIR}/data:/data\n"
    task = load_task(sidecar_task(tmp_path, "hostvar", compose=compose))
    with pytest.raises(TaskFormatError, match=r"services\.main\.volumes\[0\]: host path '/data' mounted"):
        compose_spec(task, bridge=False)
    assert any("cannot run under rsr" in d for d in compose_differences(task))
    bind = "services:\n  main:\n    volumes:\n      - ./shared:/shared:ro\n"
    with pytest.raises(TaskFormatError, match=r"host path '\./shared'"):
        compose_spec(load_task(sidecar_task(tmp_path, "bind", compose=bind)), bridge=False)


def test_compose_differences_name_host_variables_left_empty(tmp_path: Path) -> None:
    compose = "services:\n  main:\n    environment:\n      GREETING: ${USER_GREETING:-hello}\n      WHO: ${USER}\n"
    task = load_task(sidecar_task(tmp_path, "envs", compose=compose))
    assert compose_spec(task, bridge=False)["services"][MAIN_SERVICE]["environment"] == {"GREETING": "hello", "WHO": ""}
    diffs = compose_differences(task)
    assert len(diffs) == 2 and "${USER}" in diffs[0] and "${USER_GREETING}" in diffs[1]
    # Harbor's own variables are no difference at all.
    assert compose_differences(load_task(sidecar_task(tmp_path))) == []


def test_compose_spec_maps_tb1_logs_to_per_sample_volumes(tmp_path: Path) -> None:
    spec = compose_spec(load_task(tb1_task(tmp_path, "tb1c")), bridge=False)
    client = spec["services"][MAIN_SERVICE]
    assert client["volumes"] == [f"{LOG_VOLUMES['logs']}:/logs", f"{LOG_VOLUMES['agent']}:/logs/agent"]
    assert client["environment"] == ["TEST_DIR=/tests"] and "container_name" not in client
    assert client["image"].startswith("rsr-task/tb1c:") and client["build"]["context"] == str(tmp_path / "tb1c")


def test_compose_spec_passes_gpus_as_device_requests(tmp_path: Path) -> None:
    toml = TOML.format(name="gpu") + "gpus = 2\n"
    single = harbor_task(tmp_path, "gpu", toml=toml)
    devices = compose_spec(load_task(single), bridge=False)["services"][MAIN_SERVICE]["deploy"]["resources"]
    assert devices["reservations"]["devices"] == [{"driver": "nvidia", "count": 2, "capabilities": ["gpu"]}]
    multi = sidecar_task(tmp_path, "gpu-multi", toml=toml.replace("test/gpu", "test/gpu-multi"))
    main = compose_spec(load_task(multi), bridge=False)["services"][MAIN_SERVICE]
    assert main["deploy"]["resources"]["reservations"]["devices"][0]["count"] == 2


def test_create_sample_dirs_gives_every_run_its_own_tree(tmp_path: Path) -> None:
    a = create_sample_dirs(tmp_path, "task", "s1-e1")
    b = create_sample_dirs(tmp_path, "task", "s1-e1")
    assert a.root != b.root and a.verifier.is_dir() and b.verifier.is_dir()
    assert a.binds()[str(a.verifier)] == "/logs/verifier"
    a.remove()
    assert not a.root.exists() and b.root.exists()


def _compose(file: str, project: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", "compose", "-p", project, "-f", file, *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.docker
def test_sidecar_answers_by_name_without_a_network(tmp_path: Path) -> None:
    file = write_compose_file(load_task(sidecar_task(tmp_path)), bridge=False)
    project = f"rsr-test-{uuid.uuid4().hex[:8]}"
    assert _compose(file, project, "build", "-q").returncode == 0
    try:
        up = _compose(file, project, "up", "-d", "--wait")
        assert up.returncode == 0, up.stderr
        probe = _compose(file, project, "exec", "-T", MAIN_SERVICE, "bash", "-c",
                         "for i in 1 2 3 4 5; do exec 3<>/dev/tcp/cache/8080 && break; sleep 0.5; done; cat <&3; "
                         "echo $CACHE_HOST; pwd")
        assert probe.stdout.split() == ["pong", "cache", "/app"], probe.stderr
    finally:
        _compose(file, project, "down", "--volumes")


@pytest.mark.docker
def test_two_samples_of_a_tb1_compose_task_never_share_logs(tmp_path: Path) -> None:
    file = write_compose_file(load_task(tb1_task(tmp_path, "tb1-logs")), bridge=False)
    a, b = (f"rsr-test-{uuid.uuid4().hex[:8]}" for _ in range(2))
    assert _compose(file, a, "build", "-q").returncode == 0
    try:
        for project in (a, b):
            assert _compose(file, project, "up", "-d", "--wait").returncode == 0
        _compose(file, a, "exec", "-T", MAIN_SERVICE, "sh", "-c", "mkdir -p /logs/verifier && echo 1 > "
                 "/logs/verifier/reward.txt")
        seen = _compose(file, b, "exec", "-T", MAIN_SERVICE, "sh", "-c", "ls /logs/verifier 2>/dev/null | wc -l")
        assert seen.stdout.strip() == "0"
        mine = _compose(file, a, "exec", "-T", MAIN_SERVICE, "cat", "/logs/verifier/reward.txt")
        assert mine.stdout.strip() == "1"
    finally:
        for project in (a, b):
            _compose(file, project, "down", "--volumes")


def test_write_compose_file_output_is_valid_for_docker_compose_config(tmp_path: Path) -> None:
    unless(subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0,
           "a docker compose CLI")
    for task_dir in (sidecar_task(tmp_path), tb1_task(tmp_path, "tb1v")):
        file = write_compose_file(load_task(task_dir), bridge=False)
        done = subprocess.run(["docker", "compose", "-f", file, "config", "-q"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "WARN" not in done.stderr, done.stderr


@pytest.fixture(scope="module")
def inspect_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """One Inspect eval (two epochs) over the tasks below: a TB1 compose task, a prebuilt-image
    task and a task whose healthcheck never passes."""
    from inspect_ai import eval as inspect_eval

    from rsr.harness.oracle import oracle
    from rsr.suites.inspect_tasks import tasks_task

    root = tmp_path_factory.mktemp("inspect-compose")
    suite = root / "suite"
    # The tests leave a marker in /logs and fail if one is already there: a /logs shared between
    # the two concurrent epochs would fail one of them.
    # TB1 scored this task with the pytest parser: the summary says whether the checks passed.
    run_tests = ("test ! -e /logs/marker || exit 1\necho $$ > /logs/marker\nsleep 2\n"
                 "if test \"$TEST_DIR\" = /tests && grep -qx done /app/out.txt; then s=PASSED; else s=FAILED; fi\n"
                 "printf '=== short test summary info ===\\n%s test_outputs.py::test_done\\n' $s\n")
    tb1_task(suite, "tb1-epochs", run_tests=run_tests)
    d = harbor_task(suite, "prebuilt",
                    toml='[environment]\ndocker_image = "debian:bookworm-slim"\nworkdir = "/srv"\n'
                         "allow_internet = false\n",
                    solve_sh="cp /srv/data/in.csv /srv/out.csv\n",
                    test_sh="cmp -s /srv/out.csv /srv/data/in.csv && echo 1 > /logs/verifier/reward.txt "
                            "|| echo 0 > /logs/verifier/reward.txt\n",
                    extra={"environment/data/in.csv": "a,b\n1,2\n"})
    (d / "environment" / "Dockerfile").unlink()
    harbor_task(suite, "never-ready",
                toml=TOML.format(name="never-ready") + '[environment.healthcheck]\ncommand = "false"\n'
                                                       "interval_sec = 0.1\nretries = 2\n",
                solve_sh="touch /app/agent-ran\n")
    # fail_on_error=False: the never-ready task's error must not stop the others (as under Harbor).
    logs = inspect_eval(tasks_task("harbor", suite, None, None), solver=oracle(), model="mockllm/model",
                        epochs=2, display="none", log_dir=str(root / "logs"), fail_on_error=False)
    assert logs[0].status == "success", logs[0].error
    out: dict[str, list[Any]] = {}
    for sample in logs[0].samples or []:
        out.setdefault(str(sample.id), []).append(sample)
    return out


@pytest.mark.docker
def test_tb1_compose_task_runs_under_inspect_with_its_own_logs_per_epoch(inspect_run: dict[str, list[Any]]) -> None:
    samples = inspect_run["tb1-epochs"]
    rewards = [s.scores["verifier"].value["reward"] for s in samples]
    assert rewards == [1.0, 1.0], [s.scores["verifier"].explanation for s in samples]


@pytest.mark.docker
def test_prebuilt_image_task_finds_its_environment_files_in_the_workdir(inspect_run: dict[str, list[Any]]) -> None:
    for sample in inspect_run["prebuilt"]:
        assert sample.scores["verifier"].value["reward"] == 1.0, sample.scores["verifier"].explanation


@pytest.mark.docker
def test_a_failing_healthcheck_stops_the_sample_before_the_agent(inspect_run: dict[str, list[Any]]) -> None:
    for sample in inspect_run["never-ready"]:
        assert sample.error is not None and "healthcheck failed after 2 consecutive retries" in sample.error.message
