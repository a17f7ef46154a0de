"""Registry of task suites: where each comes from and where its local copy lives."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rsr.errors import RsrError

REPO_ROOT = Path(__file__).resolve().parents[2]


class SuiteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    n_tasks: int | None = None
    git_url: str | None = None
    git_commit: str | None = None
    harbor_ref: str | None = None
    subdir: str | None = None
    local: str | None = None
    """Path relative to the repository (our own suites ship with the code)."""
    note: str = ""


SUITES: dict[str, SuiteSpec] = {s.name: s for s in (
    SuiteSpec(name="core", title="rsr core (offline, ours)", local="tasks/core"),
    SuiteSpec(name="tb2", title="Terminal-Bench 2.0", n_tasks=89,
              git_url="https://github.com/laude-institute/terminal-bench-2.git",
              harbor_ref="terminal-bench@2.0"),
    SuiteSpec(name="tb2_1", title="Terminal-Bench 2.1", n_tasks=89, harbor_ref="terminal-bench@2.1"),
    SuiteSpec(name="tb3", title="Terminal-Bench 3", n_tasks=74,
              note="The paper's TB3 split; obtain it from its authors."),
    SuiteSpec(name="tb4", title="Terminal-Bench 4", n_tasks=66,
              note="The paper's TB4 split; obtain it from its authors."),
    SuiteSpec(name="tbh", title="Terminal-Bench Hard (self-built)", n_tasks=100,
              note="Self-built by the paper's authors; not public."),
    SuiteSpec(name="swr100", title="Software Terminal 100 (self-built)", n_tasks=100,
              note="Self-built by the paper's authors; not public."),
    SuiteSpec(name="lhtb", title="Long-Horizon Terminal Bench", n_tasks=46,
              harbor_ref="long-horizon-terminal-bench",
              note="Published on the Harbor hub; scored by process reward."),
)}


def tasks_home() -> Path:
    return Path(os.environ.get("RSR_TASKS_HOME") or Path.home() / ".cache" / "rsr" / "tasks")


def resolve_suite_path(suite: str, path: str | None = None) -> Path:
    """The local directory holding a suite's tasks: `path`, the repo copy, the cache, or a
    fresh git checkout of the pinned commit. Raises a clear error saying how to provide it."""
    spec = SUITES.get(suite)
    if spec is None:
        raise RsrError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    if path:
        p = Path(path).expanduser()
        if not p.exists():
            raise RsrError(f"{suite}: -T path={path} does not exist")
        return p
    if spec.local:
        return REPO_ROOT / spec.local
    cached = tasks_home() / suite
    if cached.exists() and any(cached.iterdir()):
        return cached / spec.subdir if spec.subdir else cached
    if spec.git_url and spec.git_commit and shutil.which("git"):
        try:
            _checkout(spec.git_url, spec.git_commit, cached)
            return cached / spec.subdir if spec.subdir else cached
        except subprocess.SubprocessError as e:
            reason = f"could not fetch {spec.git_url}@{spec.git_commit}: {e}"
        else:  # pragma: no cover
            reason = ""
    else:
        source = spec.git_url or spec.harbor_ref or "no public source"
        reason = f"source {source} is not available offline"
    raise RsrError(
        f"{spec.title} ({suite}) is not on this machine: {reason}.\n"
        f"Provide it with `-T path=/path/to/{suite}` or place the task directories in "
        f"{cached} (set RSR_TASKS_HOME to move the cache)."
        + (f" {spec.note}" if spec.note else "")
        + (f" With network access: `harbor datasets download {spec.harbor_ref}`." if spec.harbor_ref else "")
    )


def _checkout(url: str, commit: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["git", "init", "-q", str(tmp)], check=True, timeout=60)
    subprocess.run(["git", "-C", str(tmp), "fetch", "-q", "--depth", "1", url, commit], check=True, timeout=600)
    subprocess.run(["git", "-C", str(tmp), "checkout", "-q", "FETCH_HEAD"], check=True, timeout=600)
    tmp.replace(dest)
