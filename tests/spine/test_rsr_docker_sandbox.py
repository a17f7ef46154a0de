"""`rsr-docker`, the Engine-API sandbox, for real: containers created by Inspect through it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.util import sandbox
from taskfactory import BASE_DOCKERFILE, harbor_task

from rsr.harness.oracle import oracle
from rsr.sandbox import engine
from rsr.sandbox.docker_api import RsrDockerConfig, RsrDockerSandbox, host_pid_max, pids_limit
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

BASE = RsrDockerConfig(task="unit", image="debian:bookworm-slim", cpus=0.5, memory_mb=256)


async def _sample(cfg: RsrDockerConfig = BASE) -> tuple[dict[str, Any], RsrDockerSandbox]:
    envs = await RsrDockerSandbox.sample_init("unit", cfg, {})
    sbx = envs["default"]
    assert isinstance(sbx, RsrDockerSandbox)
    return envs, sbx


async def test_rsr_docker_applies_the_task_limits_and_no_network() -> None:
    envs, sbx = await _sample()
    try:
        info = engine.api().inspect_container(sbx.container)
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["NanoCpus"] == int(0.5e9)
        assert host["Memory"] == 256 * 2**20 and host["MemorySwap"] == 256 * 2**20
        assert host["PidsLimit"] == pids_limit(None)
        assert not any("docker.sock" in (m.get("Source") or "") for m in info.get("Mounts") or [])
        links = await sbx.exec(["sh", "-c", "ls /sys/class/net"])
        assert links.stdout.split() == ["lo"]
    finally:
        await RsrDockerSandbox.sample_cleanup("unit", BASE, envs, False)
    assert not engine.api().containers(all=True, filters={"id": sbx.container})


def test_rsr_docker_pids_limit_keeps_concurrent_sandboxes_below_pid_max(monkeypatch: pytest.MonkeyPatch) -> None:
    for concurrency in (4, 8, 32):
        monkeypatch.setenv("RSR_MAX_SANDBOXES", str(concurrency))
        assert concurrency * pids_limit(None) <= host_pid_max() // 2


async def test_rsr_docker_exec_passes_input_env_cwd_user_and_exit_code() -> None:
    envs, sbx = await _sample()
    try:
        result = await sbx.exec(["sh", "-c", 'read x; echo "$x $GREETING $(pwd) $(id -un)"; exit 3'],
                                input="hello\n", env={"GREETING": "hi"}, cwd="/tmp", user="nobody")
        assert (result.returncode, result.stdout) == (3, "hello hi /tmp nobody\n")
        missing = await sbx.exec(["no-such-program"])
        assert not missing.success
    finally:
        await RsrDockerSandbox.sample_cleanup("unit", BASE, envs, False)


async def test_rsr_docker_timeout_kills_the_process_tree_from_the_host() -> None:
    envs, sbx = await _sample()
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            # A child that ignores SIGTERM: only a kill from outside ends it.
            await sbx.exec(["sh", "-c", "trap '' TERM; sleep 300 & sleep 300; wait"], timeout=2)
        assert time.monotonic() - started < 15
        left = await sbx.exec(["sh", "-c", "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done "
                                            "2>/dev/null | grep -c '^sleep 300'"])
        assert left.stdout.strip() == "0", left
    finally:
        await RsrDockerSandbox.sample_cleanup("unit", BASE, envs, False)


async def test_rsr_docker_files_move_through_the_engine_without_container_tools() -> None:
    envs, sbx = await _sample()
    try:
        # Break the container's own copy tools: the engine's archive calls must not need them.
        await sbx.exec(["sh", "-c", "rm -f /usr/bin/tee /usr/bin/cat /usr/bin/base64 /bin/tar /usr/bin/tar"],
                       user="root")
        await sbx.write_file("deep/dir/data.bin", bytes(range(256)) * 10)
        assert await sbx.read_file("/deep/dir/data.bin", text=False) == bytes(range(256)) * 10
        await sbx.write_file("/tmp/note.txt", "ünïcode\n")
        assert await sbx.read_file("/tmp/note.txt") == "ünïcode\n"
        await sbx.exec(["ln", "-s", "note.txt", "/tmp/link"])
        assert await sbx.read_file("/tmp/link") == "ünïcode\n"  # followed, as `cat` would
        with pytest.raises(FileNotFoundError):
            await sbx.read_file("/nope.txt")
        with pytest.raises(IsADirectoryError):
            await sbx.read_file("/tmp")
    finally:
        await RsrDockerSandbox.sample_cleanup("unit", BASE, envs, False)


def test_rsr_docker_cleanup_removes_containers_of_a_dead_run() -> None:
    # A run killed with SIGKILL leaves its labelled container behind; the next run (or
    # `inspect sandbox cleanup rsr-docker`) removes it.
    dead = subprocess.Popen(["true"])
    dead.wait()
    api = engine.api()
    created = api.create_container("debian:bookworm-slim", command=["sleep", "infinity"],
                                   labels={engine.LABEL_SANDBOX: "rsr-docker", engine.LABEL_OWNER: str(dead.pid)},
                                   host_config=api.create_host_config(network_mode="none"))
    api.start(created["Id"])
    snapshot = api.commit(created["Id"], repository="rsr-verify", tag=f"orphan-{dead.pid}",
                          conf={"Labels": {engine.LABEL_SANDBOX: "rsr-verify", engine.LABEL_OWNER: str(dead.pid)}})
    assert created["Id"] in {c["Id"] for c in engine.orphaned_containers()}
    assert snapshot["Id"] in engine.orphaned_images()
    asyncio.run(RsrDockerSandbox.cli_cleanup(None))
    assert not api.containers(all=True, filters={"id": created["Id"]})
    assert snapshot["Id"] not in {i["Id"] for i in api.images(all=True)}


@agent
def fill_disk(megabytes: int) -> Agent:
    async def execute(state: AgentState) -> AgentState:
        # Written in steps, as a runaway build would; the watchdog stops the sample part way.
        for _ in range(megabytes // 50):
            await sandbox().exec(["sh", "-c", "head -c 50000000 /dev/zero > /app/fill.$(date +%s%N)"], timeout=60)
            await asyncio.sleep(0.2)
        return state

    return execute


def test_rsr_docker_storage_limit_ends_the_sample_as_a_scored_failure(tmp_path: Path) -> None:
    toml = """
        schema_version = "1.1"
        [verifier]
        timeout_sec = 30
        [agent]
        timeout_sec = 120
        [environment]
        workdir = "/app"
        storage_mb = 100
        """
    harbor_task(tmp_path, "disk-hog", toml=toml, solve_sh="echo done > /app/out.txt\n")
    logs = inspect_eval(tasks_task("harbor", tmp_path, None, None), solver=fill_disk(600), model="mockllm/model",
                        display="none", log_dir=str(tmp_path / "_logs"))
    sample = logs[0].samples[0]
    assert sample.error is None
    score = sample.scores["verifier"]
    assert score.value["passed"] == 0
    assert score.metadata["error"] == "storage_exceeded"
    assert "storage limit of 100 MB" in score.explanation
    assert sample.limit is not None and sample.limit.type == "custom"


def test_rsr_docker_broken_image_fails_its_samples_and_the_others_run(tmp_path: Path) -> None:
    harbor_task(tmp_path, "fine")
    harbor_task(tmp_path, "unbuildable", dockerfile=BASE_DOCKERFILE + "RUN exit 7\n")
    logs = inspect_eval(tasks_task("harbor", tmp_path, None, None), solver=oracle(), model="mockllm/model",
                        display="none", log_dir=str(tmp_path / "_logs"))
    samples = {str(s.id): s for s in logs[0].samples or []}
    assert samples["fine"].scores["verifier"].value["passed"] == 1
    # Scored as a failure, the build's output as the infra error's message (rsr.sandbox.infra).
    broken = samples["unbuildable"]
    assert broken.error is None and broken.scores["verifier"].value["passed"] == 0
    message = broken.scores["verifier"].metadata["infra"]["message"]
    assert "building the image" in message
    assert "exit 7" in message or "returned a non-zero code: 7" in message


def test_rsr_docker_runs_eight_concurrent_samples_without_errors(tmp_path: Path) -> None:
    for i in range(8):
        harbor_task(tmp_path, f"t{i}")
    started = time.monotonic()
    logs = inspect_eval(tasks_task("harbor", tmp_path, None, None), solver=oracle(), model="mockllm/model",
                        display="none", log_dir=str(tmp_path / "_logs"), max_sandboxes=8)
    samples = logs[0].samples or []
    assert len(samples) == 8 and all(s.error is None for s in samples)
    assert all(s.scores["verifier"].value["passed"] == 1 for s in samples)
    print(f"8 concurrent samples on {os.cpu_count()} cores: {time.monotonic() - started:.1f}s")
