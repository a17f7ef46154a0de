"""What a valid task file still cannot do on this machine, found before a sandbox starts.

The task format accepts these, and each fails later with a message that never names its cause:
CRLF line endings in a script (`can't open file '/tests/x.py\\r'`), a relative workdir, a
Dockerfile that leaves a user the harness cannot set up as (`setup script ... Permission
denied`), cpus or memory the engine cannot grant. `rsr tasks lint` reports them: errors for what
cannot run anywhere, warnings (one line naming the field) for what this host cannot give.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rsr.tasks.load import LoadedTask

DIFFICULTIES = ("easy", "medium", "hard")
"""The scaffold's levels (`rsr tasks new --difficulty`); the catalog and reports group by them."""

_ROOT_USERS = {"root", "0", "0:0", "root:root"}


@dataclass
class HostFit:
    errors: list[tuple[str, str | None, str]] = field(default_factory=list)
    """(file, field, message): the task cannot run as written."""
    warnings: list[str] = field(default_factory=list)


def _scripts(task: LoadedTask) -> list[Path]:
    paths = task.paths
    found = [paths.test_script, paths.solve_script, paths.tb1_run_tests, paths.task_dir / "solution.sh"]
    for folder in (paths.tests_dir, paths.solution_dir, paths.task_dir / "steps"):
        if folder.is_dir():
            found += sorted(p for p in folder.rglob("*") if p.suffix in (".sh", ".py") and p.is_file())
    seen: dict[Path, None] = {}
    for p in found:
        if p.is_file():
            seen.setdefault(p, None)
    return list(seen)


def _final_user(dockerfile: Path) -> tuple[int, str] | None:
    """The last USER instruction of the final stage, as (line number, user)."""
    try:
        lines = dockerfile.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    user: tuple[int, str] | None = None
    for number, line in enumerate(lines, 1):
        word = line.strip().split(None, 1)
        if not word:
            continue
        if word[0].upper() == "FROM":
            user = None  # a new stage starts as its base image's user
        elif word[0].upper() == "USER" and len(word) > 1:
            user = (number, word[1].strip())
    return user


def _host_memory_mb() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return None


def host_fit(task: LoadedTask, cpus: int | None = None, memory_mb: int | None = None) -> HostFit:
    """The problems of `task` on a host with `cpus` CPUs and `memory_mb` of memory (this one's
    by default)."""
    fit = HostFit()
    config_file = str(task.paths.config_path if task.format == "harbor" else task.paths.tb1_config_path)
    for script in _scripts(task):
        if b"\r\n" in script.read_bytes():
            fit.errors.append((str(script), None, "Windows (CRLF) line endings: the container reads each "
                               "line with a trailing \\r (`can't open file '...\\r'`); convert it with "
                               f"`sed -i 's/\\r$//' {script}`"))
    env = task.config.environment
    if env.workdir and not env.workdir.startswith("/"):
        fit.errors.append((config_file, "environment.workdir",
                           f"{env.workdir!r} is relative; the sandbox needs an absolute path, e.g. "
                           f"/{env.workdir.lstrip('./')}"))
    dockerfile = task.paths.dockerfile_path if task.format == "harbor" else task.paths.tb1_dockerfile
    found = _final_user(dockerfile) if dockerfile.is_file() and not env.docker_image else None
    if found is not None and found[1] not in _ROOT_USERS:
        number, user = found
        fit.errors.append((f"{dockerfile}:{number}", None,
                           f"`USER {user}`: the harness sets up its terminal (tmux, /logs) as the image's "
                           "user and needs root; remove the line, or end the Dockerfile with `USER root` "
                           "(run the agent's commands as that user from solve.sh or the instruction)"))
    cpus = os.cpu_count() if cpus is None else cpus
    if cpus and env.cpus > cpus:
        fit.warnings.append(f"{config_file}: environment.cpus = {env.cpus:g} but this machine has {cpus}; "
                            "the container engine refuses it here (run it on a larger host, or lower "
                            "cpus)")
    memory_mb = _host_memory_mb() if memory_mb is None else memory_mb
    if memory_mb and env.memory_mb > memory_mb:
        fit.warnings.append(f"{config_file}: environment.memory_mb = {env.memory_mb} but this machine has "
                            f"{memory_mb} MB; the task may be killed for memory here")
    difficulty = task.config.difficulty
    if difficulty is not None and difficulty not in DIFFICULTIES:
        fit.warnings.append(f"{config_file}: metadata.difficulty = {difficulty!r}: expected one of "
                            f"{', '.join(DIFFICULTIES)} (the catalog and reports group by them)")
    return fit


def no_task_here(root: Path) -> str:
    """Why a folder holds no task: one line, with the fix."""
    if root.is_file():
        return (f"{root} is a file; name a task folder (holding task.toml) or a folder of tasks")
    names = sorted(p.name for p in root.iterdir())[:5] if root.is_dir() else []
    near = [n for n in names if n.lower() in ("task.yml", "task.json", "task.tml") or n == "Task.toml"]
    hint = f" ({near[0]} is not a task file)" if near else ""
    return (f"no task.toml (Harbor) or task.yaml (Terminal-Bench 1) in {root} or its subfolders{hint}; "
            "`rsr tasks new NAME` scaffolds a task")
