"""The `rsr/verifier` scorer: runs the task's hidden tests after the agent finishes."""

from __future__ import annotations

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from rsr.tasks.load import task_from_metadata
from rsr.verify.verifier import verify


@scorer(metrics={"passed": [mean(), stderr()], "reward": [mean()], "process": [mean()]})
def verifier() -> Scorer:
    """Score = {passed (1 only for full success), reward (the task's), process (milestone
    fraction, else = passed)}; the explanation carries the capped test output."""

    async def score(state: TaskState, target: Target) -> Score:
        task = task_from_metadata(state.metadata)
        result = await verify(task)
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
            },
        )

    return score
