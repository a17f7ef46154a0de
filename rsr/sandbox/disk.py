"""Free space where a run writes: its logs, evidence bundles and rsr's cache, and Docker's data.

Checked once before a run (`preflight`: one line with the figures when short), and again when
a sample fails, to tell a host whose disk filled (infrastructure, kind `disk`) from an agent's
failure. A filesystem below `RSR_DISK_RESERVE_MB` (default 256) counts as full.
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

RESERVE_ENV = "RSR_DISK_RESERVE_MB"
DEFAULT_RESERVE_MB = 256
RUN_NEED_ENV = "RSR_DISK_NEED_MB"
DEFAULT_RUN_NEED_MB = 1024
"""What a run asks for before it starts (logs, bundles, verification snapshots), by default."""


def _mb(env: str, default: int) -> int:
    try:
        return max(0, int(os.environ.get(env, default)))
    except ValueError:
        return default


def reserve_mb() -> int:
    return _mb(RESERVE_ENV, DEFAULT_RESERVE_MB)


@dataclass(frozen=True)
class Space:
    role: str
    path: str
    free_mb: int
    device: int


def _existing(path: Path) -> Path:
    path = path.expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def space(role: str, path: Path) -> Space | None:
    found = _existing(path)
    try:
        usage = shutil.disk_usage(found)
        device = os.stat(found).st_dev
    except OSError:
        return None
    return Space(role, str(path), usage.free // 2**20, device)


@functools.lru_cache(maxsize=1)
def docker_root() -> Path | None:
    """Docker's data directory when the engine runs on this host and it is readable here."""
    try:
        from rsr.sandbox import engine

        root = engine.client().info().get("DockerRootDir")
    except Exception:  # no engine, or a remote one: its disk is not this host's
        return None
    return Path(root) if root and Path(root).exists() else None


def run_spaces(log_dir: Path | None, docker: Path | None = None) -> list[Space]:
    """The filesystems a run writes to, one entry per role."""
    from rsr.sandbox.cache import cache_dir

    found = [space("rsr cache", cache_dir())]
    if log_dir is not None:
        found.append(space("log dir", log_dir))
    if docker is not None:
        found.append(space("Docker data", docker))
    return [s for s in found if s is not None]


def preflight(log_dir: Path | None, need_mb: int | None = None) -> str | None:
    """One line naming each filesystem with less than `need_mb` free (None when all have room)."""
    need = _mb(RUN_NEED_ENV, DEFAULT_RUN_NEED_MB) if need_mb is None else need_mb
    short = [s for s in run_spaces(log_dir, docker_root()) if s.free_mb < need]
    if not short:
        return None
    figures = "; ".join(f"{s.role} {s.path}: {s.free_mb} MB free" for s in short)
    return (f"not enough disk space for a run (it needs {need} MB free where it writes): {figures}; free some "
            f"space (`docker system prune`, old logs) or point the run elsewhere ({RUN_NEED_ENV}=N to change "
            "the figure)")


def full_host_spaces(log_dir: Path | None, docker: Path | None) -> list[Space]:
    """The filesystems of the run that are below the reserve now."""
    return [s for s in run_spaces(log_dir, docker) if s.free_mb < reserve_mb()]


def inspect_cli_log_dir(argv: list[str]) -> Path | None:
    """The log directory of an `inspect eval` command line (None for anything else): the task
    factory runs before Inspect creates it, so a full disk can be said before Inspect's traceback
    (or its silent exit 0 when the directory fits and the log does not)."""
    if not argv or Path(argv[0]).name != "inspect" or "eval" not in argv[1:2]:
        return None
    for i, word in enumerate(argv):
        if word == "--log-dir" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if word.startswith("--log-dir="):
            return Path(word.split("=", 1)[1])
    return Path(os.environ.get("INSPECT_LOG_DIR") or "./logs")
