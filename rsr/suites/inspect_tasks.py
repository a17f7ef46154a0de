"""Suites as Inspect tasks: `inspect eval rsr/core --solver rsr/oracle`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Solver

from rsr.errors import DatasetLoadError, RsrError, TaskFormatError
from rsr.options import check_options
from rsr.sandbox.compose import sandbox_network
from rsr.sandbox.gpu import GPU_ENV, NEEDS_GPU, gpu_check, needs_gpu
from rsr.sandbox.healthcheck import healthcheck_script
from rsr.sandbox.images import ImageMap, find_image_map
from rsr.sandbox.pull import DEFAULT_POLICY, IMAGE_POLICIES, split_images_option
from rsr.suites.registry import SUITES, PinCheck, check_pin, resolve_suite_path
from rsr.suites.sandbox_choice import check_kind, sandbox_spec
from rsr.suites.sandbox_guard import SANDBOX_TYPE_KEY, SETUP_KEY, sandbox_guard
from rsr.tasks.load import LoadedTask, load_dataset, split_patterns, verifier_mode
from rsr.verify.scorer import verifier

# Harbor creates these, world-writable, before the agent starts (installed agents log to
# /logs/agent); `/bin/sh` because not every task image has bash.
LOG_DIRS_SETUP = ("#!/bin/sh\nmkdir -p /logs/agent /logs/verifier /logs/artifacts 2>/dev/null && "
                  "chmod 777 /logs/agent /logs/verifier /logs/artifacts 2>/dev/null || true\n")

def sample_setup(task: LoadedTask) -> str:
    """What runs in the sandbox before the agent: Harbor's log dirs, then its healthcheck."""
    hc = task.config.environment.healthcheck
    return LOG_DIRS_SETUP if hc is None else LOG_DIRS_SETUP + healthcheck_script(hc)

logger = logging.getLogger(__name__)

NETWORK_POLICIES = ("task", "none")
"""`-T network=`: follow each task's own setting (Harbor's behaviour), or give no sample a network."""


def effective_internet(task: LoadedTask, network: str = "task") -> bool:
    """Whether a sample may reach the internet under the run's network policy."""
    if network not in NETWORK_POLICIES:
        raise RsrError(f"-T network={network!r}: expected one of {', '.join(NETWORK_POLICIES)}")
    return network == "task" and task.config.environment.allow_internet


def task_sample(task: LoadedTask, suite: str, sandbox: str = "docker", images: ImageMap | str | None = None,
                integrity: str = "auto", network: str = "task", bridge: bool | None = None,
                evidence: bool = False, image_policy: str = DEFAULT_POLICY) -> Sample:
    cfg = task.config
    internet = effective_internet(task, network)
    spec = sandbox_spec(task, sandbox, images, allow_internet=internet, bridge=bridge, policy=image_policy)
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
            # What the sandbox must enforce: the task's setting under the run's policy.
            "allow_internet": internet,
            "task_allow_internet": cfg.environment.allow_internet,
            "network_policy": network,
            # What a compose sandbox actually gets on this engine (no bridge -> none).
            "sandbox_network": sandbox_network(internet, bridge) if internet else "none",
            "verifier_mode": verifier_mode(cfg),
            "steps": [name for name, _ in task.step_instructions],
            "multi_step_reward_strategy": (cfg.multi_step_reward_strategy or "mean") if cfg.steps else None,
            # As Harbor hands them to the agent: what a harness may offer or name to the model.
            "mcp_servers": [m.model_dump(exclude_defaults=True) for m in cfg.environment.mcp_servers],
            "parser_name": task.parser_name,
            "run_tests_in_same_shell": task.tb1.run_tests_in_same_shell if task.tb1 else None,
            "gpus": cfg.environment.gpus,
            "workdir": cfg.environment.workdir,
            "category": cfg.category,
            "difficulty": cfg.difficulty,
            "milestones": cfg.milestones,
            "cpus": cfg.environment.cpus,
            "memory_mb": cfg.environment.memory_mb,
            "integrity_policy": integrity,
            # Keep the sample's evidence bundle beside the log (rsr.verify.evidence).
            "evidence": evidence,
            # Where the image may come from (rsr.sandbox.pull); the sandbox adds IMAGE_KEY, the
            # image it actually ran (pulled, built or found), when the sample starts.
            "image_policy": image_policy,
            "docker_image": cfg.environment.docker_image,
            SANDBOX_TYPE_KEY: spec.type,
            SETUP_KEY: sample_setup(task),
        },
        sandbox=spec,
        # Not Inspect's `setup`: a failure there is an error outside scoring. The task's setup
        # step (rsr.suites.sandbox_guard) runs it as root, and its failure is scored as infra.
        # Relative keys land in the sandbox's working directory, where Harbor uploads them.
        files={_in_workdir(task, rel): str(path) for rel, path in task.prebuilt_environment_files().items()} or None,
    )


def _disk_preflight_under_inspect() -> None:
    """`inspect eval rsr/...`: the same disk preflight as `rsr eval run` (which checks before it
    builds its tasks), said in one line before Inspect creates its log directory."""
    import sys

    from rsr.sandbox.disk import inspect_cli_log_dir, preflight

    log_dir = inspect_cli_log_dir(sys.argv)
    short = preflight(log_dir) if log_dir is not None else None
    if short is not None:
        print(f"rsr: {short}", file=sys.stderr, flush=True)
        raise RsrError(short)


def _mark_unmet_needs(samples: list[Sample], tasks: list[LoadedTask], kind: str) -> None:
    """Record on each sample what its task needs and this run lacks (rsr.sandbox.needs), and
    say so once, before any sample runs. A cluster (k8s) schedules memory and disk itself."""
    from rsr.sandbox.disk import docker_root, space
    from rsr.sandbox.needs import UNMET_KEY, host_memory_mb, summary, tests_fetch, unmet_needs

    local = kind != "k8s"
    memory = host_memory_mb() if local else None
    root = docker_root() if local else None
    found = space("Docker data", root) if root is not None else None
    by_task: dict[str, list[dict[str, str]]] = {}
    for sample, loaded in zip(samples, tasks, strict=True):
        assert sample.metadata is not None
        needs = unmet_needs(sample.metadata, loaded.config.environment, memory,
                            found.free_mb if found is not None else None,
                            fetches=tests_fetch(loaded.paths.tests_dir))
        if needs:
            sample.metadata[UNMET_KEY] = needs
            by_task[loaded.name] = needs
    for line in summary(by_task):
        logger.warning("%s", line)


def _in_workdir(task: LoadedTask, rel: str) -> str:
    return f"{task.workdir.rstrip('/')}/{rel}" if task.workdir else rel


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
               exclude: str | list[str] | None, solver: Solver | None = None, *,
               network: str = "task", unpinned: bool = False, sandbox: str = "docker", images: str | None = None,
               integrity: str = "auto", evidence: bool = False) -> Task:
    root = resolve_suite_path(suite, path)
    pin = check_pin(suite, root, unpinned=_flag(unpinned))
    return tasks_task(suite, root, tasks, exclude, solver, network=network, pin=pin, sandbox=sandbox,
                      images=images, integrity=integrity, evidence=_flag(evidence))


def _flag(value: Any) -> bool:
    # `-T unpinned=true` arrives as a bool; from Python callers it may be a string.
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def tasks_task(suite: str, root: Path, tasks: str | list[str] | None,
               exclude: str | list[str] | None, solver: Solver | None = None, *,
               network: str = "task", pin: PinCheck | None = None, sandbox: str = "docker",
               images: str | None = None, integrity: str = "auto", evidence: bool = False) -> Task:
    """An Inspect task with one sample per task directory below root."""
    if integrity not in INTEGRITY_MODES:
        raise RsrError(f"-T integrity={integrity!r}: expected one of {', '.join(INTEGRITY_MODES)}")
    image_policy, image_map = split_images_option(images)
    if image_map is not None and check_kind(sandbox) != "k8s":
        raise RsrError(f"-T images={images!r}: expected one of {', '.join(IMAGE_POLICIES)} "
                       "(an image map or registry applies to -T sandbox=k8s only)")
    found = find_image_map(image_map) if check_kind(sandbox) == "k8s" else None  # once per suite
    root = root.expanduser().resolve()
    if network not in NETWORK_POLICIES:
        raise RsrError(f"-T network={network!r}: expected one of {', '.join(NETWORK_POLICIES)}")
    if tasks is not None and not split_patterns(tasks):
        raise RsrError(f"rsr/{suite}: -T tasks= names no task; name some (-T tasks=hello-world,git-*) "
                       "or leave -T tasks out to run the whole suite")
    loaded = load_dataset(root, tasks, exclude)
    if loaded.errors:
        raise DatasetLoadError(loaded.errors)
    if not loaded.tasks:
        raise TaskFormatError(root, None, "no tasks found" + (f" matching {tasks!r}" if tasks else ""))
    runnable, not_run, gpu = split_gpu_tasks(loaded.tasks, check_kind(sandbox))
    if not runnable:
        raise RsrError(f"{suite}: every selected task ({len(not_run)}) {NEEDS_GPU} and this machine has none "
                       f"({gpu}); run it where `nvidia-smi -L` lists a GPU, or set {GPU_ENV}=1 if the engine "
                       "has one rsr cannot see")
    if not_run:
        # Inspect shows warnings in its display, under `inspect eval` and `rsr eval` alike.
        logger.warning("%s: %d task(s) not run: %s (%s): %s; the log lists them and reports count them "
                       "apart", suite, len(not_run), NEEDS_GPU, gpu, ", ".join(str(t["task"]) for t in not_run))
    if integrity == "strict":
        refuse_undeclared(runnable, suite if suite in SUITES else str(root))
    metadata: dict[str, Any] = {"suite": suite, "suite_path": str(root), "network_policy": network,
                                "integrity": integrity, "sandbox": sandbox, "evidence": evidence,
                                # Tasks selected but not run, with why: reports count them apart
                                # (neither a 0 nor missing from the suite's size).
                                "not_run": not_run, "gpu_check": gpu, "image_policy": image_policy}
    if pin is not None:
        metadata.update(pin.metadata())
    _disk_preflight_under_inspect()
    samples = [task_sample(t, suite, sandbox, found, integrity, network, evidence=evidence,
                           image_policy=image_policy) for t in runnable]
    _mark_unmet_needs(samples, runnable, check_kind(sandbox))
    return Task(
        dataset=MemoryDataset(samples, name=suite, location=str(root)),
        solver=solver or _default_solver(),
        setup=sandbox_guard(),
        scorer=verifier(integrity),
        metadata=metadata,
        # As under Harbor, one broken task (an image that does not build) is that task's error,
        # scored as an infrastructure error (rsr.sandbox.infra); the other samples still run.
        fail_on_error=False,
        # A started sample ends scored: an error still on its last attempt (after any
        # --retry-on-error retries) goes to the scorer, which classifies it (rsr.verify.outcome).
        score_on_error=True,
    )


def refuse_undeclared(tasks: list[LoadedTask], target: str) -> None:
    """Strict mode carries only deliverables: a task that declares none and has none inferred
    (rsr.verify.inferred) is refused before any sample starts, naming the command that infers them."""
    from rsr.verify import inferred

    missing = [t for t in tasks if t.config.verifier.allow_changes is None
               and t.config.verifier.isolation != "live" and verifier_mode(t.config) != "separate"
               and inferred.usable(t.digest) is None]
    if missing:
        raise RsrError(inferred.refusal([t.name for t in missing], target, [t.digest for t in missing]))


def split_gpu_tasks(tasks: list[LoadedTask], kind: str) -> tuple[list[LoadedTask], list[dict[str, Any]], str]:
    """The tasks that can run here, those that need a GPU this machine lacks (as the log
    records them), and how that was decided. A cluster (k8s) schedules GPU requests itself."""
    wanting = [t for t in tasks if needs_gpu(t)]
    if not wanting:
        return list(tasks), [], "no task needs a GPU"
    if kind == "k8s":
        return list(tasks), [], "k8s: the cluster schedules GPU requests"
    check = gpu_check()
    if check.available:
        return list(tasks), [], check.how
    names = {t.name for t in wanting}
    not_run = [{"task": t.name, "reason": NEEDS_GPU, "gpus": t.config.environment.gpus,
                "task_digest": t.digest} for t in wanting]
    return [t for t in tasks if t.name not in names], not_run, check.how


ALL_TASKS = "*"
"""The registered suites' `tasks` default: Inspect hands an empty `-T tasks=` over as None, which
must not mean "every task" (it would run the whole suite when the user meant to name some)."""


def _selection(tasks: str | list[str] | None) -> str | list[str] | None:
    return None if tasks == ALL_TASKS else ("" if tasks is None else tasks)


def _suite(name: str):  # noqa: ANN202 - builds a registered @task per suite
    # `**options`: Inspect would drop an undeclared `-T` with a warning (rsr.options says why).
    def factory(path: str | None = None, tasks: str | None = ALL_TASKS, exclude: str | None = None,
                network: str = "task", unpinned: bool = False, sandbox: str = "docker", images: str | None = None,
                integrity: str = "auto", evidence: bool = False, **options: Any) -> Task:
        check_options(f"rsr/{name}", "-T", factory, locals())
        return suite_task(name, path, _selection(tasks), exclude, network=network, unpinned=unpinned, sandbox=sandbox,
                          images=images, integrity=integrity, evidence=evidence)

    factory.__name__ = name
    factory.__doc__ = (f"The {name} suite (`-T path=` for a local copy, `-T tasks=glob,...`, `-T exclude=glob,...`, "
                       "`-T network=none` to give no sample a network, `-T unpinned=true` to run a copy that "
                       "differs from the pin, `-T sandbox=docker|compose|k8s`, `-T images=auto|force-build|never` "
                       "(pull a task's prebuilt image, else build; always build from its Dockerfile; "
                       "neither), or `-T images=MAP` for k8s, "
                       "`-T integrity=auto|strict|warn`, `-T evidence=true` to keep each sample's evidence "
                       "bundle beside the log for `rsr regrade`; any other `-T` is refused).")
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
def harbor(path: str | None = None, tasks: str | None = ALL_TASKS, exclude: str | None = None,
           network: str = "task", sandbox: str = "docker", images: str | None = None,
           integrity: str = "auto", evidence: bool = False, **options: Any) -> Task:
    """Any Harbor (or Terminal-Bench 1) dataset directory or single task directory."""
    check_options("rsr/harbor", "-T", harbor, locals())
    if path is None:
        raise RsrError("rsr/harbor: name the dataset or task directory with -T path=DIR")
    return tasks_task("harbor", Path(path), _selection(tasks), exclude, network=network, sandbox=sandbox, images=images,
                      integrity=integrity, evidence=_flag(evidence))
