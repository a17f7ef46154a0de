"""The Docker daemon restarting under a run. A private engine (its own socket, data root and
containerd namespace, started the way rsr/sandbox/setup-docker.sh starts the shared one) is
restarted while a sample's agent runs, so the shared engine other tests use is never touched.
The sample in flight ends its attempt as an infra failure (`engine`), the run neither hangs nor
crashes, and the sample runs again once the engine answers (the spec's retry_on_error), with
both attempts in the log."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from docker_needs import unless
from taskfactory import harbor_task

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
DOCKERD = Path(os.environ.get("RSR_DOCKER_HOME", "/var/lib/rsr-docker")) / "bin" / "dockerd"


def _data_root() -> Path:
    # Kept between runs (rsr's cache): the base image is loaded once, and no teardown walks it.
    from rsr.sandbox.cache import cache_dir

    return cache_dir("fault-engine")


_engines: dict[Path, subprocess.Popen[bytes]] = {}


def _start(root: Path) -> None:
    args = [str(DOCKERD), "--bridge=none", "--iptables=false", "--ip-forward=false",
            f"--host=unix://{root}/docker.sock", f"--data-root={_data_root()}", f"--exec-root={root}/exec",
            f"--pidfile={root}/docker.pid", "--containerd=/run/containerd/containerd.sock",
            "--containerd-namespace=rsr-fault", "--containerd-plugins-namespace=rsr-fault-plugins"]
    with (root / "dockerd.log").open("ab") as log:
        _engines[root] = subprocess.Popen(
            args, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "PATH": f"{DOCKERD.parent}:{os.environ.get('PATH', '')}"})
    deadline = time.monotonic() + 60
    while subprocess.run(["docker", "info"], env=_env(root), capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, (root / "dockerd.log").read_text()[-2000:]
        time.sleep(0.5)


def _stop(root: Path) -> None:
    proc = _engines.pop(root)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)  # reaped here, or /proc would keep the zombie
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "DOCKER_HOST": f"unix://{root}/docker.sock"}


@pytest.fixture(scope="module")
def private_engine() -> Iterator[Path]:
    unless(DOCKERD.is_file() and os.geteuid() == 0 and Path("/run/containerd/containerd.sock").exists(),
           f"rsr's dockerd at {DOCKERD} and containerd (a private engine to restart)")
    root = Path("/tmp") / f"rsr-fault-engine-{os.getpid()}"  # short: the socket path has a length limit
    root.mkdir()
    try:
        _start(root)
        have = subprocess.run(["docker", "image", "inspect", "debian:bookworm-slim"], env=_env(root),
                              capture_output=True)
        if have.returncode != 0:
            saved = subprocess.run(f"docker save debian:bookworm-slim | DOCKER_HOST=unix://{root}/docker.sock "
                                   "docker load", shell=True, capture_output=True, text=True)
            assert saved.returncode == 0, saved.stderr
        yield root
    finally:
        if root in _engines:
            _stop(root)  # its containers stop with it; the next start removes them as orphans
        shutil.rmtree(root, ignore_errors=True)


def test_an_engine_restart_mid_agent_does_end_the_attempt_as_infra_and_the_sample_runs_again(
        private_engine: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    suite = tmp_path / "suite"
    harbor_task(suite, "quick")
    harbor_task(suite, "slow", solve_sh="sleep 10\necho done > /app/out.txt\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "restart", "suites": [{"task": "rsr/harbor", "args": {"path": str(suite)}}],
                                    "epochs": 1, "reducers": ["mean"], "agent": "rsr/oracle", "retry_attempts": 0,
                                    "retry_on_error": 1}))
    env = {**_env(private_engine), "PYTHONPATH": str(REPO), "INSPECT_DISPLAY": "none"}
    restarted = threading.Event()

    def restart_when_the_agent_runs() -> None:
        while not subprocess.run(["docker", "ps", "-q", "--filter", "label=rsr.task-name=slow"], env=env,
                                 capture_output=True, text=True).stdout.strip():
            time.sleep(0.3)
        time.sleep(2)
        _stop(private_engine)
        _start(private_engine)
        restarted.set()

    watcher = threading.Thread(target=restart_when_the_agent_runs, daemon=True)
    watcher.start()
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "rsr.cli.main", "eval", "run", str(spec), "--model", "mockllm/model",
                           "--log-dir", str(tmp_path / "logs")], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=300)
    took = time.monotonic() - started
    watcher.join(60)
    assert restarted.is_set()
    print(f"run took {took:.1f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    samples = {str(s.id): s for s in read_eval_log(str(log_file)).samples or []}
    slow = samples["slow"]
    # The first attempt ended when the engine went away; the log keeps it, and the retry passed.
    assert len(slow.error_retries or []) == 1
    assert any(w in slow.error_retries[0].message for w in ("Docker engine", "sandbox container", "Connection")), \
        slow.error_retries[0].message
    assert slow.scores["verifier"].value["passed"] == 1 and slow.scores["verifier"].metadata["attempts"] == 2
    assert "passed 100.0% of 2 runs" in " ".join(done.stdout.split())
    assert "retried " in " ".join(done.stdout.split())  # every sample in flight at the restart
