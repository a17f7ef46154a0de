"""The `rsr/verifier` scorer: runs the task's hidden tests after the agent finishes."""

from __future__ import annotations

import contextlib
from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState
from inspect_ai.util import store

from rsr.tasks.load import task_from_metadata
from rsr.verify.artifacts import Collected, collect, sample_artifacts_dir
from rsr.verify.steps import STORE_ARTIFACTS_DIR, STORE_STEPS, StepsRecord, trial_result
from rsr.verify.verifier import Integrity, VerifierResult, verify

STORE_ARTIFACTS = "rsr/artifacts"
"""Sample store key: the artifacts collected after the agent (`Collected`), for evidence bundles."""


@scorer(metrics={"passed": [mean(), stderr()], "reward": [mean()], "process": [mean()]})
def verifier(integrity: Integrity = "auto") -> Scorer:
    """Score = {passed (1 only for full success), reward (the task's), process (milestone
    fraction, else = passed)}; the explanation carries the capped test output, the metadata the
    integrity report (`integrity`: auto = strict for tasks that declare `allow_changes`), the
    collected artifacts and, for a multi-step task, every step's rewards (`steps`)."""

    async def score(state: TaskState, target: Target) -> Score:
        task = task_from_metadata(state.metadata)
        extra: dict[str, Any] = {}
        if task.config.steps:
            result, extra = _multi_step(task)
        else:
            # Harbor collects artifacts after the agent, before the tests.
            root = sample_artifacts_dir(task, getattr(state, "uuid", None))
            collected = await collect(task, root / "artifacts")
            if not collected.files:
                with contextlib.suppress(OSError):
                    root.rmdir()  # nothing kept, no directory left behind
            store().set(STORE_ARTIFACTS, collected.model_dump())
            extra["artifacts"] = collected.model_dump()
            result = await verify(task, integrity=state.metadata.get("integrity_policy") or integrity)
        return Score(
            value=result.score_value(),
            answer="passed" if result.passed else "failed",
            explanation=result.explanation,
            metadata={
                "milestones": result.milestones,
                "metrics": result.metrics,
                "error": result.error,
                "returncode": result.returncode,
                "verifier_duration_sec": result.duration_sec,
                "task_digest": task.digest,
                "integrity": result.integrity.model_dump() if result.integrity else None,
                **extra,
            },
        )

    return score


def _multi_step(task: Any) -> tuple[VerifierResult, dict[str, Any]]:
    """The verdict of a multi-step sample: its steps already ran (and were verified) with the agent."""
    raw = store().get(STORE_STEPS)
    if raw is None:
        return VerifierResult(passed=False, reward=0.0, process=0.0, error="steps_not_run",
                              explanation=f"{task.name} has {len(task.config.steps)} steps ([[steps]]) but the "
                                          "solver did not run them: use an rsr harness (rsr/oracle, rsr/terminus2, "
                                          "...) or wrap the agent with rsr.harness.steps.stepwise"), {}
    record = StepsRecord.model_validate(raw)
    result = trial_result(record)
    steps = [s.model_dump(exclude={"explanation"}) for s in record.steps]
    # One list for the whole sample, paths as in a Harbor trial dir (steps/<name>/artifacts/...).
    root = store().get(STORE_ARTIFACTS_DIR) or ""
    merged = Collected(dir=root if any(s.artifacts and s.artifacts.files for s in record.steps) else "")
    for s in record.steps:
        if s.artifacts is not None:
            prefix = f"steps/{s.name}/artifacts/"
            merged.files += [f.model_copy(update={"path": prefix + f.path}) for f in s.artifacts.files]
            merged.manifest += s.artifacts.manifest
            merged.hooks += s.artifacts.hooks
    store().set(STORE_ARTIFACTS, merged.model_dump())
    return result, {"steps": steps, "strategy": record.strategy, "trial_rewards": record.rewards,
                    "artifacts": merged.model_dump()}
