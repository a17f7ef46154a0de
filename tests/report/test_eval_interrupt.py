"""`rsr eval run` stopped by Ctrl-C or a batch system's SIGTERM, and two runs on one log
directory: real `rsr eval run` processes on a one-task suite whose reference solution sleeps
(the oracle stays busy in its rsr-docker sandboxes until the signal arrives)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from rsr.cli.main import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def busy_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("busy")
    task = root / "suite" / "busy-sleeper"
    shutil.copytree(REPO / "tasks" / "core" / "hello-world", task)
    toml = task / "task.toml"
    # Busy for the test's seconds; on a build without the lock a second run ends within 90 s.
    toml.write_text(toml.read_text().replace("rsr-core/hello-world", "rsr-test/busy-sleeper")
                    .replace("[agent]\ntimeout_sec = 300", "[agent]\ntimeout_sec = 90"))
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\nsleep 600\n")
    spec = root / "busy.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "busy", "suites": [{"task": "rsr/harbor", "args": {"path": str(root / "suite")}}],
        "epochs": 2, "reducers": ["mean"], "agent": "rsr/oracle", "retry_attempts": 0}))
    return spec


def _containers(pid: int, *extra: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"label=rsr.owner-pid={pid}", *extra],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


@contextmanager
def busy_run(spec: Path, log_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """An `rsr eval run` whose two samples are running in their sandboxes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rsr.cli.main", "eval", "run", str(spec), "--model", "mockllm/model",
         "--log-dir", str(log_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 180
        while len(_containers(proc.pid, "--filter", "status=running")) < 2:
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the samples' sandboxes never started"
            time.sleep(0.5)
        time.sleep(2)  # the oracle's exec is under way
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for container in _containers(proc.pid):
            subprocess.run(["docker", "rm", "-f", container], capture_output=True)


@pytest.mark.docker
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_rsr_eval_run_does_exit_nonzero_name_the_resume_command_and_leave_no_container_when_signalled(
        busy_spec: Path, tmp_path: Path, signum: signal.Signals) -> None:
    log_dir = tmp_path / "logs"
    with busy_run(busy_spec, log_dir) as proc:
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=120)
        left = _containers(proc.pid)
    assert proc.returncode == 128 + signum, out[-3000:]
    flat = " ".join(out.split())
    assert f"rsr eval: interrupted by {signum.name}: the run did not finish" in flat
    assert (f"Resume with:\n  cd {REPO} && rsr eval run {busy_spec} --model mockllm/model "
            f"--log-dir {log_dir}\n") in out
    assert left == []
    assert not (log_dir / ".rsr-run.lock").exists()


@pytest.mark.docker
def test_rsr_eval_run_refuses_a_log_dir_in_use_naming_the_owner_pid(
        busy_spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    log_dir = tmp_path / "logs"
    with busy_run(busy_spec, log_dir) as proc:
        rc = main(["eval", "run", str(busy_spec), "--model", "mockllm/model", "--log-dir", str(log_dir)])
        err = " ".join(capsys.readouterr().err.split())
        logs = sorted(log_dir.glob("*.eval"))
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    assert rc == 2
    assert f"{log_dir}: the log directory is in use by pid {proc.pid} on " in err
    assert "rsr eval run" in err and "pass another --log-dir" in err
    assert len(logs) == 1  # the refused run wrote nothing beside the owner's log


def test_log_dir_lock_does_not_outlive_a_killed_owner(tmp_path: Path) -> None:
    from rsr.report.runguard import LogDirLocked, log_dir_lock

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom rsr.report.runguard import log_dir_lock\n"
         f"with log_dir_lock({str(tmp_path)!r}, 'holder'):\n    print('held', flush=True)\n    time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LogDirLocked, match=rf"in use by pid {holder.pid} on .* \(`holder`\)"):
            with log_dir_lock(tmp_path, "second"):
                pass
    finally:
        holder.kill()  # SIGKILL: no clean-up runs, the lock file stays behind
        holder.wait()
    assert (tmp_path / ".rsr-run.lock").exists()
    with log_dir_lock(tmp_path, "third") as lock:
        assert '"command": "third"' in lock.read_text()
