"""Suites as Inspect tasks: `inspect eval rsr/core --solver rsr/oracle`."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Solver

from rsr.errors import DatasetLoadError, RsrError, TaskFormatError
from rsr.sandbox.images import ImageMap, find_image_map
from rsr.suites.registry import resolve_suite_path
from rsr.suites.sandbox_choice import check_kind, sandbox_spec
from rsr.tasks.load import LoadedTask, load_dataset
from rsr.verify.scorer import verifier


def task_sample(task: LoadedTask, suite: str, sandbox: str = "docker",
                images: ImageMap | str | None = None, integrity: str = "auto") -> Sample:
    cfg = task.config
    return Sample(
        id=task.name,
        input=task.instruction,
        target="pass",
        metadata={
            "task_dir": str(task.paths.task_dir),
            "task_name": task.name,
            "task_full_name": task.full_name,
            "task_format": task.format,
            "suite": suite,
            "task_digest": task.digest,
            "agent_timeout_sec": cfg.agent.timeout_sec,
            "verifier_timeout_sec": cfg.verifier.timeout_sec,
            "allow_internet": cfg.environment.allow_internet,
            "workdir": cfg.environment.workdir,
            "category": cfg.category,
            "difficulty": cfg.difficulty,
            "milestones": cfg.milestones,
            "cpus": cfg.environment.cpus,
            "memory_mb": cfg.environment.memory_mb,
            "integrity_policy": integrity,
        },
        sandbox=sandbox_spec(task, sandbox, images),
    )


def _default_solver() -> Solver:
    # The generic harness is the default agent, as at inference in the paper.
    from inspect_ai.agent import as_solver

    try:
        from rsr.harness.terminus2 import terminus2
    except ImportError:  # harness not installed in this checkout: oracle is the safe default
        from rsr.harness.oracle import oracle

        return as_solver(oracle())
    return as_solver(terminus2())


INTEGRITY_MODES = ("auto", "strict", "warn")


def suite_task(suite: str, path: str | None, tasks: str | list[str] | None,
               exclude: str | list[str] | None, solver: Solver | None = None,
               sandbox: str = "docker", images: str | None = None, integrity: str = "auto") -> Task:
    return tasks_task(suite, resolve_suite_path(suite, path), tasks, exclude, solver, sandbox, images, integrity)


def tasks_task(suite: str, root: Path, tasks: str | list[str] | None,
               exclude: str | list[str] | None, solver: Solver | None = None,
               sandbox: str = "docker", images: str | None = None, integrity: str = "auto") -> Task:
    """An Inspect task with one sample per task directory below root."""
    if integrity not in INTEGRITY_MODES:
        raise RsrError(f"-T integrity={integrity!r}: expected one of {', '.join(INTEGRITY_MODES)}")
    found = find_image_map(images) if check_kind(sandbox) == "k8s" else None  # once per suite
    root = root.expanduser().resolve()
    loaded = load_dataset(root, tasks, exclude)
    if loaded.errors:
        raise DatasetLoadError(loaded.errors)
    if not loaded.tasks:
        raise TaskFormatError(root, None, "no tasks found" + (f" matching {tasks!r}" if tasks else ""))
    return Task(
        dataset=MemoryDataset([task_sample(t, suite, sandbox, found, integrity) for t in loaded.tasks],
                              name=suite, location=str(root)),
        solver=solver or _default_solver(),
        scorer=verifier(integrity),
        metadata={"suite": suite, "suite_path": str(root), "integrity": integrity, "sandbox": sandbox},
        # As under Harbor, one broken task (an image that does not build) is that task's error;
        # the other samples still run and are scored (`inspect eval-retry` reruns the errors).
        fail_on_error=False,
    )


def _suite(name: str):  # noqa: ANN202 - builds a registered @task per suite
    def factory(path: str | None = None, tasks: str | None = None, exclude: str | None = None,
                sandbox: str = "docker", images: str | None = None, integrity: str = "auto") -> Task:
        return suite_task(name, path, tasks, exclude, sandbox=sandbox, images=images, integrity=integrity)

    factory.__name__ = name
    factory.__doc__ = (f"The {name} suite (`-T path=` for a local copy, `-T tasks=glob,...`, "
                       "`-T exclude=glob,...`, `-T sandbox=docker|compose|k8s`, `-T images=MAP` for k8s, "
                       "`-T integrity=auto|strict|warn`).")
    return task(name=name)(factory)


core = _suite("core")
tb2 = _suite("tb2")
tb2_1 = _suite("tb2_1")
tb3 = _suite("tb3")
tb4 = _suite("tb4")
tbh = _suite("tbh")
swr100 = _suite("swr100")
lhtb = _suite("lhtb")


@task
def harbor(path: str, tasks: str | None = None, exclude: str | None = None,
           sandbox: str = "docker", images: str | None = None, integrity: str = "auto") -> Task:
    """Any Harbor (or Terminal-Bench 1) dataset directory or single task directory."""
    return tasks_task("harbor", Path(path), tasks, exclude, sandbox=sandbox, images=images, integrity=integrity)
