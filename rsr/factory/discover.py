"""Stage 1, discover: run the harnesses over the task pool; every rollout is recorded.

One Inspect task per harness (`discover_<harness>`), one sample per (task, epoch) so that a
resumed run can skip exactly the rollouts that already finished. After the harness, a solver
records the files the run wrote below the working directory: the critic uses them to catch
runbooks that hand over the source run's deliverables.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai.agent import Agent, as_solver
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Generate, Solver, TaskState, chain, solver
from inspect_ai.util import sandbox, store

from rsr.errors import DatasetLoadError, RsrError, UnknownOptionError
from rsr.factory.config import FactoryConfig, HarnessName
from rsr.factory.ledger import (
    FactoryPaths,
    StageCost,
    run_eval,
    sample_seconds,
    sample_tokens,
)
from rsr.factory.records import Rollout, write_rows
from rsr.harness.terminus2 import STORE_RESULT
from rsr.suites.inspect_tasks import refuse_undeclared, task_sample
from rsr.suites.registry import resolve_suite_path
from rsr.tasks.load import LoadedTask, load_dataset
from rsr.verify.scorer import verifier

STORE_PRODUCED = "rsr_factory_produced"
START_MARKER = "/tmp/.rsr-factory-start"
MAX_FILE_BYTES = 64_000


@dataclass(frozen=True)
class PoolTask:
    task: LoadedTask
    suite: str


def load_pool(cfg: FactoryConfig) -> list[PoolTask]:
    """Every task of the pool's suites and paths, filtered; names must be unique."""
    roots: list[tuple[str, Path]] = [(s, resolve_suite_path(s)) for s in cfg.pool.suites]
    roots += [(p.name, p) for p in cfg.pool.paths]
    pool: dict[str, PoolTask] = {}
    for suite, root in roots:
        loaded = load_dataset(root, cfg.pool.tasks or None, cfg.pool.exclude or None)
        if loaded.errors:
            raise DatasetLoadError(loaded.errors)
        for task in loaded.tasks:
            if task.name in pool and pool[task.name].task.paths.task_dir != task.paths.task_dir:
                raise RsrError(f"pool: task name {task.name!r} appears in "
                               f"{pool[task.name].task.paths.task_dir} and {task.paths.task_dir}")
            pool[task.name] = PoolTask(task, suite)
    if not pool:
        raise RsrError("pool: no tasks matched (check pool.suites, pool.paths and pool.tasks)")
    return [pool[name] for name in sorted(pool)]


def harness_agent(name: HarnessName, args: dict[str, Any]) -> Agent:
    from rsr.harness.rsrt import rsrt
    from rsr.harness.statem import statem
    from rsr.harness.terminus2 import terminus2

    factories: dict[str, Callable[..., Agent]] = {"terminus2": terminus2, "statem": statem,
                                                  "rsrt": rsrt}
    try:
        return factories[name](**args)
    except (TypeError, UnknownOptionError) as e:  # the harness names the key and the closest one
        raise RsrError(f"discovery.harnesses[{name}].args: {e}") from e


@solver
def mark_start() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sandbox().exec(["sh", "-c", f"touch {START_MARKER}"])
        return state

    return solve


@solver
def record_produced_files(limit: int) -> Solver:
    """Store the small text files written below the working directory during the run."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if limit <= 0:
            return state
        sbx = sandbox()
        workdir = state.metadata.get("workdir") or (await sbx.exec(["pwd"])).stdout.strip() or "/"
        found = await sbx.exec(["sh", "-c", f"find {shlex.quote(workdir)} -xdev -type f -newer "
                                f"{START_MARKER} -size -{MAX_FILE_BYTES // 1000}k 2>/dev/null "
                                f"| head -n {limit}"])
        files: dict[str, str] = {}
        for path in found.stdout.splitlines():
            try:
                content = await sbx.read_file(path, text=True)
            except Exception:  # binary or vanished files are not deliverables we can compare
                continue
            files[path] = content
        store().set(STORE_PRODUCED, files)
        return state

    return solve


def rollout_id(harness: str, task: str, epoch: int) -> str:
    return f"{harness}~{task}~e{epoch}"


def build_tasks(cfg: FactoryConfig, pool: list[PoolTask], done: set[str]) -> list[Task]:
    if cfg.integrity == "strict":  # before any rollout: strict carries only deliverables
        refuse_undeclared([item.task for item in pool], ",".join(sorted({item.suite for item in pool})))
    tasks = []
    for spec in cfg.discovery.harnesses:
        samples: list[Sample] = []
        for item in pool:
            for epoch in range(1, cfg.discovery.epochs + 1):
                sid = rollout_id(spec.name, item.task.name, epoch)
                if f"{sid}@1" in done:
                    continue
                sample = task_sample(item.task, item.suite, cfg.sandbox, integrity=cfg.integrity)
                sample.id = sid
                sample.metadata = {**(sample.metadata or {}), "discover_epoch": epoch,
                                   "discover_harness": spec.name}
                samples.append(sample)
        if not samples:
            continue
        tasks.append(Task(
            name=f"discover_{spec.name}", dataset=MemoryDataset(samples),
            solver=chain(mark_start(), as_solver(harness_agent(spec.name, spec.args)),
                         record_produced_files(cfg.discovery.produced_files_limit)),
            scorer=verifier(cfg.integrity), metadata={"factory_stage": "discover", "harness": spec.name}))
    return tasks


def score_of(sample: Any) -> tuple[bool, float]:
    value = next(iter(sample.scores.values())).value if sample.scores else {}
    if not isinstance(value, dict):
        return False, 0.0
    return float(value.get("passed", 0)) >= 1.0, float(value.get("reward", 0.0))


def run(cfg: FactoryConfig, paths: FactoryPaths, max_rollouts: int | None = None) -> StageCost:
    log_dir = paths.logs("discover")
    pool = load_pool(cfg)
    done = set(paths.done("discover"))
    tasks = build_tasks(cfg, pool, done)
    if max_rollouts is not None:
        tasks = _truncate(tasks, max_rollouts)
    run_eval(cfg, tasks, log_dir, cfg.models.model)
    return collect(paths)


def _truncate(tasks: list[Task], n: int) -> list[Task]:
    out = []
    for task in tasks:
        samples = list(task.dataset)[:max(n, 0)]
        n -= len(samples)
        if samples:
            task.dataset = MemoryDataset(samples)
            out.append(task)
    return out


def collect(paths: FactoryPaths) -> StageCost:
    """Rebuild `stages/rollouts.jsonl` from the discovery logs."""
    cost = StageCost()
    rows: list[Rollout] = []
    for _, logged in sorted(paths.done("discover").items()):
        sample = logged.sample
        meta = sample.metadata or {}
        passed, reward = score_of(sample)
        result = sample.store.get(STORE_RESULT) or {}
        cost.add(sample, sandboxed=True)
        rows.append(Rollout(
            id=str(sample.id), task=meta["task_name"], task_dir=meta["task_dir"],
            suite=meta["suite"], harness=meta["discover_harness"], epoch=meta["discover_epoch"],
            passed=passed, reward=reward, turns=int(result.get("turns", 0)),
            tokens=sample_tokens(sample), sandbox_seconds=sample_seconds(sample),
            log=str(logged.log)))
    write_rows(paths.stage_file("rollouts"), rows)
    return cost
