"""A full disk, as a user meets it: a small loop-mounted filesystem, filled, holding the log
directory or rsr's cache. Each case ends in one line with the figures and a non-zero exit (no
traceback, no silent exit 0), keeps what was written, and the same command resumes once there
is room; a full cache under a sample is infra `disk`, not the agent's 0."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker_needs import unless

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _mountable() -> bool:
    return os.geteuid() == 0 and all(shutil.which(b) for b in ("mkfs.ext4", "mount", "umount"))


@pytest.fixture(scope="module")
def full_fs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 16 MB ext4 filesystem (no root reserve) filled to the last block."""
    unless(_mountable(), "root with mkfs.ext4 and mount (a loop-mounted filesystem)")
    base = tmp_path_factory.mktemp("fullfs")
    image, mnt = base / "fs.img", base / "mnt"
    mnt.mkdir()
    with image.open("wb") as f:
        f.truncate(16 * 2**20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True)
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], capture_output=True, text=True)
    unless(mounted.returncode == 0, f"loop mounts ({mounted.stderr.strip()})")
    try:
        (mnt / "cache").mkdir()
        _fill(mnt)
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path) -> None:
    """Write until the filesystem refuses, then take the last blocks and inodes with small files."""
    for size in (65536, 4096, 1024):
        for n in range(100_000):
            try:
                with (mnt / f"filler-{size}-{n}").open("wb") as f:
                    f.write(b"\0" * size * (256 if size == 65536 else 1))
                    f.flush()
                    os.fsync(f.fileno())
            except OSError:
                break
    os.sync()


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), "INSPECT_DISPLAY": "none", **(env or {})})


SPEC = """name: one
suites:
  - task: rsr/core
epochs: 1
reducers: [mean]
agent: rsr/oracle
retry_attempts: 1
"""


def _eval_run(log_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    spec = log_dir.parent.parent / "one.yaml"
    if not spec.exists():
        spec.write_text(SPEC)
    return _run("rsr", "eval", "run", str(spec), "--model", "mockllm/model", "--log-dir", str(log_dir),
                "-T", "tasks=hello-world", env=env)


def test_a_disk_that_fills_under_the_run_stops_it_with_one_line_and_the_same_command_resumes(full_fs: Path) -> None:
    logs = full_fs / "logs-b"
    # Past the preflight (RSR_DISK_NEED_MB=0), the run meets the full disk when it writes.
    done = _eval_run(logs, RSR_DISK_NEED_MB="0")
    text = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in text, text[-2000:]
    assert any("the disk filled during the run" in x and "MB free" in x and "resume" in x for x in text.splitlines())
    for filler in full_fs.glob("filler-65536-*"):  # the user frees some space
        filler.unlink()
    try:
        again = _eval_run(logs, RSR_DISK_NEED_MB="0")
        assert again.returncode == 0, (again.stdout + again.stderr)[-2000:]
        assert "passed 100.0% of 1 run" in again.stdout.replace("\n", " ")
    finally:
        _fill(full_fs)


def _inspect_eval(log_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return _run("inspect", "eval", "rsr/core", "-T", "tasks=hello-world", "--solver", "rsr/oracle", "--model",
                "mockllm/model", "--log-dir", str(log_dir), "--display", "none", env=env)


def test_inspect_eval_into_a_full_log_dir_does_exit_non_zero_with_one_line(full_fs: Path) -> None:
    done = _inspect_eval(full_fs / "logs-c")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("rsr: not enough disk space"))
    assert "log dir" in line and "MB free" in line
    # Past the preflight, the log that cannot be written is still one line and exit 1 (not 0).
    past = _inspect_eval(full_fs, RSR_DISK_NEED_MB="0")
    assert past.returncode == 1
    line = next(x for x in past.stderr.splitlines() if x.startswith("rsr: the disk filled"))
    assert "rsr/core" in line and "MB free" in line


def test_a_full_rsr_cache_under_a_sample_is_infra_disk_not_the_agents_zero(full_fs: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    done = _run("inspect", "eval", "rsr/core", "-T", "tasks=hello-world", "--solver", "rsr/oracle", "--model",
                "mockllm/model", "--log-dir", str(tmp_path), "--display", "none",
                # Past the preflight: the cache fills while the run goes on.
                env={"RSR_CACHE_DIR": str(full_fs / "cache"), "RSR_DISK_NEED_MB": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    (log_file,) = tmp_path.glob("*.eval")
    (sample,) = read_eval_log(str(log_file)).samples or []
    score = sample.scores["verifier"]
    assert score.value["passed"] == 0 and score.metadata["infra"]["kind"] == "disk"
    assert "rsr cache" in score.metadata["infra"]["message"]
