"""`rsr tasks shell TASK`: one task's sandbox as its agent sees it, with a person at the shell.

The sample is built exactly as an eval builds it (image, limits, network, log directories,
healthcheck), through Inspect, so what the shell shows is what an agent meets; the sandbox is
removed when the shell exits unless `keep` (then rsr-docker names the container it kept).
"""

from __future__ import annotations

from pathlib import Path

from rsr.errors import RsrError
from rsr.suites.inspect_tasks import tasks_task
from rsr.suites.registry import resolve_suite_path


def task_dir_of(name_or_path: str) -> Path:
    """A task directory, or the name of a core task."""
    given = Path(name_or_path).expanduser()
    if (given / "task.toml").is_file() or (given / "task.yaml").is_file():
        return given.resolve()
    core = resolve_suite_path("core") / name_or_path
    if (core / "task.toml").is_file():
        return core
    raise RsrError(f"{name_or_path}: neither a task directory (with task.toml) nor a core task")


def open_shell(name_or_path: str, *, run_oracle: bool = False, run_tests: bool = False,
               keep: bool = False, network: str = "task", log_dir: str = "logs/shell") -> dict | None:
    """Run the shell sample; returns the verifier's score value when `run_tests`."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.agent import as_solver

    from rsr.harness.shell import shell

    task_dir = task_dir_of(name_or_path)
    task = tasks_task("shell", task_dir, None, None, as_solver(shell(run_oracle)), network=network)
    (log,) = inspect_eval(task, display="none", score=run_tests, sandbox_cleanup=not keep,
                          log_dir=log_dir, fail_on_error=True)
    samples = log.samples or []
    if log.status != "success" or not samples:
        reason = log.error.message if log.error else "the sample did not finish"
        raise RsrError(f"{task_dir.name}: {reason.strip().splitlines()[-1]}")
    if samples[0].error is not None:
        raise RsrError(f"{task_dir.name}: {samples[0].error.message.strip().splitlines()[-1]}")
    if not run_tests:
        return None
    scores = samples[0].scores or {}
    return dict(scores["verifier"].value) if "verifier" in scores else None  # type: ignore[arg-type]
