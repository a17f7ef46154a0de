"""Registry of task suites: where each comes from, what it is pinned to, where its copy lives.

A public suite is pinned by git commit (the one Harbor's registry lists) and, where a digest is
known, by the digest of its task set (`rsr.tasks.load.tasks_digest`). `rsr tasks fetch SUITE`
checks the pinned commit out into the cache and records the digest it found there
(`PIN_RECORD`); an eval then refuses a copy whose digest differs from the pin (or from that
record) unless the run says `-T unpinned=true`, which the log then carries.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rsr.bundled import bundled
from rsr.errors import RsrError

REPO_ROOT = Path(__file__).resolve().parents[2]


class SuiteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    n_tasks: int | None = None
    git_url: str | None = None
    git_commit: str | None = None
    digest: str | None = None
    """`tasks_digest` of the pinned task set, where known."""
    harbor_ref: str | None = None
    subdir: str | None = None
    local: str | None = None
    """Path relative to the repository (our own suites ship with the code)."""
    note: str = ""


SUITES: dict[str, SuiteSpec] = {s.name: s for s in (
    SuiteSpec(name="core", title="rsr core (offline, ours)", local="tasks/core"),
    SuiteSpec(name="tb2", title="Terminal-Bench 2.0", n_tasks=89,
              git_url="https://github.com/laude-institute/terminal-bench-2.git",
              # The commit Harbor's registry lists for every task of terminal-bench@2.0.
              git_commit="69671fbaac6d67a7ef0dfec016cc38a64ef7a77c",
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
    """The local directory holding a suite's tasks: `path`; for a bundled suite (core) the working
    directory's `tasks/core`, else the copy shipped with rsr; else the cache (filled by `rsr tasks
    fetch`). Raises a clear error saying how to provide it."""
    spec = SUITES.get(suite)
    if spec is None:
        raise RsrError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    if path:
        p = Path(path).expanduser()
        if not p.exists():
            raise RsrError(f"{suite}: -T path={path} does not exist")
        return p
    if spec.local:
        # The user's tree first (a checkout's, edited), then the copy rsr ships. `rsr tasks new`
        # writes into ./my-tasks, which no suite reads.
        here = Path.cwd() / spec.local
        if here.is_dir():
            return here
        return bundled(spec.local) or REPO_ROOT / spec.local
    cached = tasks_home() / suite
    if cached.exists() and any(cached.iterdir()):
        return cached / spec.subdir if spec.subdir else cached
    if spec.git_url and spec.git_commit:
        reason = f"no copy in the cache; `rsr tasks fetch {suite}` checks out {spec.git_url}@{spec.git_commit[:12]}"
    else:
        source = spec.git_url or spec.harbor_ref
        reason = f"source {source} is not available offline" if source else "it has no public source"
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
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "init", "-q", str(tmp)], check=True, timeout=60, capture_output=True)
    subprocess.run([*git, "-C", str(tmp), "fetch", "-q", "--depth", "1", url, commit], check=True, timeout=600,
                   capture_output=True)
    subprocess.run([*git, "-C", str(tmp), "checkout", "-q", "FETCH_HEAD"], check=True, timeout=600,
                   capture_output=True)
    head = subprocess.run([*git, "-C", str(tmp), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    if not head.startswith(commit) and head != commit:
        raise subprocess.SubprocessError(f"fetched {head}, expected {commit}")
    shutil.rmtree(tmp / ".git")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.replace(dest)


PIN_RECORD = ".rsr-pin.json"
"""Written into a fetched copy: the commit it came from and the digest found at fetch time."""


class PinCheck(BaseModel):
    """How a local copy of a suite relates to its pin (recorded in the eval's task metadata)."""

    model_config = ConfigDict(frozen=True)

    status: Literal["pinned", "unpinned", "no-pin"]
    """pinned: matches its pin; unpinned: differs but the run allowed it; no-pin: the suite has
    no public pin (ours, shipped with the code, or the paper's private sets)."""
    digest: str
    expected: str | None = None
    commit: str | None = None
    reason: str = ""


def suite_digest(root: Path) -> str:
    """The digest a pin is compared with: every task below root, names and contents."""
    from rsr.tasks.load import load_dataset, tasks_digest

    return tasks_digest(load_dataset(root).tasks)


def check_pin(suite: str, root: Path, *, unpinned: bool = False) -> PinCheck:
    """Compare a local copy with the suite's pin; raise unless it matches or `unpinned`."""
    spec = SUITES.get(suite)
    digest = suite_digest(root)
    if spec is None or not (spec.digest or spec.git_commit):
        return PinCheck(status="no-pin", digest=digest)
    expected, reason = spec.digest, ""
    record = _read_record(root)
    if expected is None:
        if record is None:
            reason = f"no {PIN_RECORD} (this copy was not made by `rsr tasks fetch {suite}`)"
        elif record.get("commit") != spec.git_commit:
            reason = f"fetched from commit {record.get('commit')}, pinned {spec.git_commit}"
        else:
            expected = str(record.get("digest"))
    if expected is not None and digest != expected:
        reason = f"digest {digest} differs from the pinned {expected}"
    if not reason:
        return PinCheck(status="pinned", digest=digest, expected=expected, commit=spec.git_commit)
    if not unpinned:
        raise RsrError(f"{spec.title} ({suite}) at {root} does not match its pin: {reason}.\n"
                       f"Run `rsr tasks fetch {suite}` for the pinned copy, or pass `-T unpinned=true` to "
                       "evaluate this copy anyway (the log marks the run as unpinned).")
    return PinCheck(status="unpinned", digest=digest, expected=expected, commit=spec.git_commit, reason=reason)


def _read_record(root: Path) -> dict | None:
    for d in (root, root.parent):
        path = d / PIN_RECORD
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                return None
            return data if isinstance(data, dict) else None
    return None


def fetch_suite(suite: str, *, dest: Path | None = None, git_url: str | None = None) -> tuple[Path, PinCheck]:
    """Check the suite's pinned commit out into the cache (or `dest`), verify it against a known
    digest, and record the digest. `git_url` overrides the source (a mirror, or a test repo)."""
    spec = SUITES.get(suite)
    if spec is None:
        raise RsrError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    url = git_url or spec.git_url
    if not url or not spec.git_commit:
        raise RsrError(f"{spec.title} ({suite}) has no pinned public git source to fetch."
                       + (f" {spec.note}" if spec.note else "")
                       + (f" With network access: `harbor datasets download {spec.harbor_ref}`." if spec.harbor_ref
                          else ""))
    if not shutil.which("git"):
        raise RsrError("`rsr tasks fetch` needs git on PATH")
    target = dest or tasks_home() / suite
    try:
        _checkout(url, spec.git_commit, target)
    except (subprocess.SubprocessError, OSError) as e:
        detail = getattr(e, "stderr", b"") or b""
        detail = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        raise RsrError(f"could not fetch {url}@{spec.git_commit}: {e} {detail.strip()[-500:]}") from e
    root = target / spec.subdir if spec.subdir else target
    digest = suite_digest(root)
    if spec.digest and digest != spec.digest:
        shutil.rmtree(target, ignore_errors=True)
        raise RsrError(f"{url}@{spec.git_commit} has digest {digest}, pinned {spec.digest}; removed the copy")
    (target / PIN_RECORD).write_text(json.dumps({"suite": suite, "git_url": url, "commit": spec.git_commit,
                                                 "digest": digest}, indent=2) + "\n")
    return root, PinCheck(status="pinned", digest=digest, expected=spec.digest or digest, commit=spec.git_commit)
