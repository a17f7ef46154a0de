"""`rsr tasks infer-deliverables`: run each undeclared task's reference solution in its real
sandbox and derive its deliverables (the design: `rsr.verify.inferred`).

One Inspect eval: the oracle is the only solver (no agent's run is ever read), and the scorer,
while the oracle's sandbox is still up, captures its changes as the verifier would and prunes
the candidate roots by running the task's tests under strict mode on the pristine image.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.agent import as_solver
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import sandbox

from rsr.errors import RsrError
from rsr.harness.oracle import oracle
from rsr.sandbox.backing import container_of
from rsr.suites.inspect_tasks import tasks_task
from rsr.suites.registry import SUITES, resolve_suite_path
from rsr.tasks.load import LoadedTask, load_dataset, task_from_metadata
from rsr.verify import deliverables, inferred
from rsr.verify.verifier import verify_changes

INFERRED = "inferred_deliverables"
DEFAULT_TRIALS = 24
# Runs of the reference's whole change set before it is called failing: a racy test that fails
# once is a flaky reference, not a refusal (the note says which test failed).
REFERENCE_TRIES = 3
_FAILED = re.compile(r"^(?:FAILED|ERROR)\s+(\S+)|^(\S+::\S+)\s+(?:FAILED|ERROR)\b", re.M)


def failing_tests(output: str) -> list[str]:
    """The tests a run's output names as failed (pytest's summary or verbose lines)."""
    return list(dict.fromkeys(a or b for a, b in _FAILED.findall(output)))


def has_reference(task: LoadedTask) -> bool:
    """Whether the task ships a reference solution to infer from."""
    if task.format == "terminal-bench-1":
        return any((task.paths.task_dir / n).is_file() for n in ("solution.sh", "solution.yaml"))
    return task.paths.solve_script.is_file()


async def _passes(task: LoadedTask, container: str, plan: deliverables.Plan,
                  limit: int | None) -> tuple[bool, bool, str]:
    """(pass, live state, why): the task's tests under strict mode on the pristine image with
    what `plan` keeps of the reference's changes (the oracle's container lends its network: a
    server the solution left running still answers). A pass that strict mode reports as live
    state (processes outlived the tests) counts as a pass: the tests accepted the deliverables."""
    import asyncio

    changes = await asyncio.to_thread(deliverables.capture, container, plan, limit)
    try:
        # A task verified with a network of its own ("fresh") gets none: its tests restart the
        # service the solution left running, which must not answer for them.
        joined = None if task.config.verifier.isolation == "fresh" else container
        result = await verify_changes(task, changes, integrity="strict", network_container=joined)
    finally:
        changes.discard()
    live = result.error == "live_state"
    failed = failing_tests(result.explanation)
    named = f" (failed: {', '.join(failed[:6])})" if failed else ""
    return result.passed or live, live, f"{result.error or ''}{named}: {result.explanation[-300:]}"


async def infer_task(task: LoadedTask, container: str, max_trials: int = DEFAULT_TRIALS) -> inferred.InferredTask:
    """The reference's deliverables: its candidate roots, pruned by test runs (module doc)."""
    import asyncio

    from rsr.sandbox import engine

    info = await asyncio.to_thread(engine.api().inspect_container, container)
    workdir = task.workdir or (info.get("Config") or {}).get("WorkingDir") or "/"
    limit_mb = task.config.environment.storage_mb
    limit = limit_mb * 1024 * 1024 if limit_mb else None
    everything = await asyncio.to_thread(deliverables.capture, container, deliverables.Plan(trust="harbor"), limit)
    everything.discard()
    kinds = inferred.candidate_roots(everything.kept, everything.added, everything.deleted,
                                     everything.directories, workdir)
    candidates = list(kinds)
    all_dirs = set(everything.directories)
    created_dirs = all_dirs & set(everything.added)
    changed = sorted(set(everything.kept) | set(everything.deleted))
    base = dict(name=task.name, digest=task.digest, workdir=workdir, image=str(info.get("Image") or ""),
                changed=len(changed))

    def plan(roots: list[str]) -> deliverables.Plan:
        return deliverables.Plan(trust="inferred", roots=[workdir.rstrip("/") or "/",
                                                          *(inferred.escape(r) for r in roots if kinds[r])],
                                 exact=[r for r in roots if not kinds[r]], inferred_from=task.digest)

    # Start-up hooks the reference wrote (a pip install's .pth) are tried without first: carried
    # only if the tests cannot pass without them.
    hooks = [r for r in candidates if not kinds[r] and deliverables.is_startup_hook(r)]
    trials, live_seen, pruned = 1, False, []
    ok, live, why = await _passes(task, container, plan([r for r in candidates if r not in hooks]), limit)
    if ok:
        pruned, candidates = list(hooks), [r for r in candidates if r not in hooks]
    elif hooks:
        trials += 1
        ok, live, why = await _passes(task, container, plan(candidates), limit)
    failures: list[str] = []
    for _ in range(2, REFERENCE_TRIES + 1):
        if ok:
            break
        failures.append(why.strip()[:300])
        trials += 1
        ok, live, why = await _passes(task, container, plan(candidates), limit)
    if not ok:
        failures.append(why.strip()[:300])
        return inferred.InferredTask(**base, status="reference-failed", trials=trials,
                                     roots=[inferred.escape(r) for r in candidates if kinds[r]],
                                     exact=[r for r in candidates if not kinds[r]],
                                     note=f"the reference solution fails under strict with its whole change set, "
                                          f"{len(failures)} of {len(failures)} tries: " + " | ".join(failures))
    flaky = (f"flaky reference: it failed {len(failures)} of {len(failures) + 1} tries before passing "
             f"({' | '.join(failures)}); " if failures else "")
    live_seen = live
    kept = list(candidates)

    async def passes_with(roots: list[str]) -> bool:
        nonlocal trials, live_seen
        trials += 1
        passed, live, _ = await _passes(task, container, plan(roots), limit)
        live_seen = live_seen or (passed and live)
        return passed

    def budget() -> bool:
        return trials < max_trials

    if kept and budget() and await passes_with([]):
        pruned, kept = kept, []
    for group in inferred.groups(kept).values():  # whole groups first: one run prunes a cache tree
        if budget() and len(group) > 1 and await passes_with([r for r in kept if r not in group]):
            pruned += group
            kept = [r for r in kept if r not in group]
    for root in list(kept):
        if budget() and await passes_with([r for r in kept if r != root]):
            pruned.append(root)
            kept.remove(root)
    # A needed tree the reference created that holds directories (say a site directory its first
    # package install created) is split into its children, so that what an agent adds beside
    # them is not carried along; a directory of files only (a package) stays one root, so that
    # an honest agent's extra module in it is carried.
    for _ in range(4):
        split = False
        for root in list(kept):
            children = sorted({root + "/" + p[len(root) + 1:].split("/", 1)[0]
                               for p in changed if p.startswith(root + "/")})
            if not kinds[root] or not any(c in all_dirs for c in children) or not budget():
                continue
            kinds.update({c: c in created_dirs for c in children})
            narrower = [r for r in kept if r != root] + children
            if not await passes_with(narrower):
                continue
            kept, split = narrower, True
            for child in children if len(children) > 1 else []:
                if budget() and await passes_with([r for r in kept if r != child]):
                    pruned.append(child)
                    kept.remove(child)
        if not split:
            break
    untried = len(kept) if not budget() else 0
    from rsr.verify.integrity import python_site_dirs

    sites = await asyncio.to_thread(python_site_dirs, container)
    admitted = inferred.variants({r: kinds[r] for r in kept}, everything.added,
                                 [*sites, *inferred.user_sites(sites)])
    kinds.update(admitted)
    kept += list(admitted)
    note = flaky + (("the reference leaves processes that outlive its tests: strict mode reports its passes as "
                     "live-state (not verifiable)") if live_seen else "")
    return inferred.InferredTask(**base, roots=sorted(inferred.escape(r) for r in kept if kinds[r]),
                                 exact=sorted(r for r in kept if not kinds[r]),
                                 pruned=sorted(pruned), unpruned=untried, admitted=sorted(admitted),
                                 trials=trials, note=note)


@scorer(metrics=[mean()])
def inference_scorer(max_trials: int = DEFAULT_TRIALS) -> Scorer:
    """Infers the sample's deliverables while the oracle's sandbox is up; value 1 when inferred."""
    async def score(state: TaskState, target: Target) -> Score:
        task = task_from_metadata(state.metadata)
        container = await container_of(sandbox())
        if container is None:
            raise RsrError(f"{task.name}: inference reads the sandbox's filesystem and needs a Docker sandbox")
        found = await infer_task(task, container, max_trials)
        return Score(value=1.0 if found.status == "inferred" else 0.0, explanation=found.note or
                     f"{len(found.roots)} root(s) beside the workdir, {len(found.pruned)} pruned",
                     metadata={INFERRED: found.model_dump(mode="json")})

    return score


def infer_deliverables(target: str, *, tasks: str | None = None, out: Path | None = None,
                       max_trials: int = DEFAULT_TRIALS, log_dir: str = "logs/infer-deliverables",
                       max_sandboxes: int | None = None,
                       progress: Callable[[str], None] = lambda _m: None) -> tuple[Path, list[inferred.InferredTask]]:
    """Infer every undeclared task's deliverables under `target` (a suite or a directory) and
    merge them into `out` (default: the cache's `deliverables/<suite or directory name>.json`)."""
    if target in SUITES:
        root, suite = resolve_suite_path(target), target
    else:
        root, suite = Path(target).expanduser(), "harbor"
        if not root.is_dir():
            raise RsrError(f"{target}: neither a suite ({', '.join(SUITES)}) nor a directory")
    root = root.resolve()
    loaded = load_dataset(root, tasks, None)
    if loaded.errors:
        raise RsrError(f"{root}: {len(loaded.errors)} task(s) do not load: {loaded.errors[0]}")
    undeclared = [t for t in loaded.tasks if t.config.verifier.allow_changes is None]
    out = out or inferred.default_store() / f"{target if target in SUITES else root.name}.json"
    # Nothing to infer from: the stated policy (the workdir alone) is their record.
    policy = [inferred.no_reference(t.name, t.digest, t.workdir) for t in undeclared if not has_reference(t)]
    undeclared = [t for t in undeclared if has_reference(t)]
    if policy:
        inferred.write_file(out, policy, str(target))
        progress(f"{len(policy)} task(s) without a reference solution: {inferred.NO_REFERENCE_POLICY}")
    if not undeclared:
        if not policy:
            progress("every selected task declares its deliverables: nothing to infer")
        return out, policy
    progress(f"reference solutions of {len(undeclared)} task(s) in Docker")
    t = tasks_task(suite, root, ",".join(x.name for x in undeclared), None, solver=as_solver(oracle()))
    t.scorer = [inference_scorer(max_trials)]
    started = time.monotonic()
    logs = inspect_eval(t, model="mockllm/model", log_dir=log_dir, display="none", max_sandboxes=max_sandboxes,
                        fail_on_error=False, score_display=False)
    found: list[inferred.InferredTask] = []
    failed: list[str] = []
    for sample in logs[0].samples or []:
        score = (sample.scores or {}).get("inference_scorer") or next(iter((sample.scores or {}).values()), None)
        record: dict[str, Any] | None = (score.metadata or {}).get(INFERRED) if score else None
        if record is None:
            failed.append(f"{sample.id}: {sample.error.message if sample.error else 'no inference'}")
            continue
        found.append(inferred.InferredTask.model_validate(record))
    inferred.write_file(out, found, str(target))
    took = time.monotonic() - started
    progress(f"{len(found)} inferred in {took:.0f}s ({took / max(1, len(found)):.0f}s per task, "
             f"{sum(f.trials for f in found)} test runs), written to {out}")
    found = policy + found
    if failed:
        raise RsrError(f"{len(failed)} task(s) could not be inferred (the rest are in {out}): {'; '.join(failed[:5])}")
    return out, found
