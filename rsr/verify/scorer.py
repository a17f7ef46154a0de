"""The `rsr/verifier` scorer: runs the task's hidden tests after the agent finishes."""

from __future__ import annotations

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from rsr.tasks.load import task_from_metadata
from rsr.verify.verifier import Integrity, verify


@scorer(metrics={"passed": [mean(), stderr()], "reward": [mean()], "process": [mean()]})
def verifier(integrity: Integrity = "auto") -> Scorer:
    """Score = {passed (1 only for full success), reward (the task's), process (milestone
    fraction, else = passed)}; the explanation carries the capped test output, the metadata the
    integrity report (`integrity`: auto = strict for tasks that declare `allow_changes`)."""

    async def score(state: TaskState, target: Target) -> Score:
        task = task_from_metadata(state.metadata)
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
            },
        )

    return score
