"""Multi-step tasks (`[[steps]]`) run as Harbor 0.26's `MultiStepTrial` runs them, in one sample.

Per step, in order: the step's `workdir/` is copied into the agent's working directory and its
`setup.sh` run there, then the step's healthcheck; the agent gets the step's instruction (and
the step's timeout and user); the step's collect hooks run and its artifacts are collected;
the step's tests (the shared tests/ with steps/<name>/tests/ laid over them) are run by the
ordinary verifier. The trial stops after a step whose setup or healthcheck failed, whose
verifier produced no reward (Harbor: an exception without a verifier result), or whose rewards
fall below its `min_reward` (a number gates `reward`, a table gates each key; a missing key is
-inf). The trial's rewards are Harbor's `multi_step_reward_strategy`: `final` takes the last step
that ran verbatim, `mean` (the default) the per-key mean with one term per declared step
(invariant 5, "every step counts"): a key a step lacks, a step without a verifier result (its
tests could not start on what the agent left: a void step) and a step the trial never reached
each count 0. Harbor leaves void steps out of the mean, so an agent that wrecks the last step
keeps the first step's score; rsr does not follow it there.

The agent side (one agent call per step) is `rsr.harness.steps.stepwise`; this module owns
what runs between the calls, the per-step records (kept in the sample store) and the trial
reward the scorer reports.
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from rsr.tasks.load import TESTS_MOUNT, VERIFIER_LOG_DIR, LoadedTask, iter_files
from rsr.verify.artifacts import Collected, collect
from rsr.verify.reward import total_reward
from rsr.verify.verifier import VerifierResult, cap_output, verify

STORE_STEPS = "rsr/steps"
"""Sample store key: the `StepsRecord` of a multi-step sample (written after every step)."""
STORE_ARTIFACTS_DIR = "rsr/artifacts_dir"
"""Sample store key: the sample's host directory of collected artifacts (steps/<name>/artifacts/)."""
STORE_CURRENT = "rsr/current_step"
"""Sample store key: the index of the step whose agent is running (None between steps)."""

NO_RESULT_ERRORS = frozenset({"missing_reward", "malformed_reward", "verifier_timeout", "sandbox_error",
                              "setup_failed", "storage_exceeded", "tb1_parse_error", "verifier_bootstrap"})
"""rsr verifier errors where Harbor's verifier raises instead of returning rewards (the step then
has no verifier result: it ends the trial and is a 0 term of the mean)."""


class StepRecord(BaseModel):
    name: str
    rewards: dict[str, float] | None = None
    """Harbor's `verifier_result.rewards` for the step; None: no verifier result."""
    passed: bool = False
    reward: float = 0.0
    error: str | None = None
    """Why the step has no or a failed verdict (setup_failed, healthcheck_failed, a verifier error)."""
    explanation: str = ""
    integrity: dict[str, Any] | None = None
    artifacts: Collected | None = None
    stopped: str | None = None
    """Set on the step after which the trial stopped, with the reason."""


class StepsRecord(BaseModel):
    strategy: Literal["mean", "final"]
    steps: list[StepRecord] = Field(default_factory=list)
    declared: list[str] = Field(default_factory=list)

    @property
    def rewards(self) -> dict[str, float] | None:
        return trial_rewards(self.steps, self.strategy, len(self.declared))


def strategy_of(task: LoadedTask) -> Literal["mean", "final"]:
    return task.config.multi_step_reward_strategy or "mean"


def trial_rewards(steps: list[StepRecord], strategy: Literal["mean", "final"],
                  declared: int = 0) -> dict[str, float] | None:
    """The trial's rewards from its steps' (after Harbor's `_select_multi_step_reward`, see the
    module doc). Invariant 5, enforced here: under `mean` the denominator is the number of
    declared steps (`declared`; at least the steps that ran), whatever ran or produced rewards."""
    if not steps:
        return None
    if strategy == "final":
        return steps[-1].rewards
    valid = [s.rewards for s in steps if s.rewards is not None]
    keys = {k for r in valid for k in r}
    if not keys:
        return None
    terms = max(declared, len(steps))
    return {k: sum(r.get(k, 0) for r in valid) / terms for k in sorted(keys)}


def min_reward_failure(rewards: dict[str, float] | None, min_reward: float | dict[str, float]) -> str | None:
    """Why a step's rewards fail its `min_reward` gate, or None when they pass."""
    thresholds = {"reward": min_reward} if isinstance(min_reward, int | float) else min_reward
    for key, threshold in thresholds.items():
        actual = rewards.get(key, float("-inf")) if rewards else float("-inf")
        if actual < threshold:
            return f"{key}={actual} below min_reward {threshold}"
    return None


def harbor_rewards(result: VerifierResult) -> dict[str, float] | None:
    """The rewards Harbor's verifier would have returned for this result (None: it would raise)."""
    if result.error in NO_RESULT_ERRORS:
        return None
    rewards = dict(result.metrics) if result.metrics else {"reward": result.reward}
    if result.error is not None:
        # rsr's integrity rules failed a reward file that says more (strict mode): rsr's verdict.
        rewards["reward"] = result.reward
    return rewards


async def prepare_step(task: LoadedTask, sbx: Any) -> str | None:
    """The step's workdir files, its setup.sh and its healthcheck; the failure, or None."""
    from rsr.sandbox.healthcheck import healthcheck_script

    name = task.step_name
    assert name is not None
    user = None if task.config.agent.user is None else str(task.config.agent.user)
    workdir = (await sbx.exec(["pwd"], user=user)).stdout.strip() or "/"
    source = task.paths.step_workdir_dir(name)
    for rel, path in iter_files(source):
        await sbx.write_file(f"{workdir.rstrip('/')}/{rel}", path.read_bytes())
    if (source / "setup.sh").is_file():
        done = await sbx.exec(["bash", f"{workdir.rstrip('/')}/setup.sh"], user=user, cwd=workdir)
        if not done.success:
            return f"setup_failed: step '{name}' setup.sh exited with code {done.returncode}: {done.stderr[-500:]}"
    hc = task.config.steps[task.step].healthcheck if task.step is not None else None
    if hc is not None:
        done = await sbx.exec(["sh", "-c", healthcheck_script(hc)], user="root")
        if not done.success:
            return f"healthcheck_failed: step '{name}': {done.stderr.strip()[-500:]}"
    return None


async def _reset_verifier_dirs(sbx: Any) -> None:
    """After tests ran in the agent's own container (live isolation): none of them may be left
    for the next step's agent to read (Harbor empties both before the next step)."""
    await sbx.exec(["sh", "-c", f"rm -rf {TESTS_MOUNT} && mkdir -p {VERIFIER_LOG_DIR} && "
                                f"find {VERIFIER_LOG_DIR} -mindepth 1 -delete; chmod 777 {VERIFIER_LOG_DIR}"],
                   user="root")


async def run_steps(task: LoadedTask, run_agent: Callable[[LoadedTask], Awaitable[None]], *,
                    artifacts_root: Path, save: Callable[[StepsRecord], None] | None = None,
                    integrity: Any = "auto") -> StepsRecord:
    """Run every step of `task` (see the module doc); `run_agent(step_view)` runs the agent on
    one step, `save` is called with the record after every step (crash evidence)."""
    from inspect_ai.util import sandbox

    sbx = sandbox()
    record = StepsRecord(strategy=strategy_of(task), declared=[s.name for s in task.config.steps])
    live = task.config.verifier.isolation == "live"
    last = len(task.config.steps) - 1
    for index, st in enumerate(task.config.steps):
        view = task.for_step(index)
        step = StepRecord(name=st.name)
        record.steps.append(step)
        failure = await prepare_step(view, sbx)
        if failure is not None:
            step.error, _, step.explanation = failure.partition(": ")
            step.stopped = "its setup failed"
            break
        await run_agent(view)
        step.artifacts = await collect(view, artifacts_root / "steps" / st.name / "artifacts")
        result = await verify(view, sbx, integrity=integrity, final=index == last)
        if live:
            await _reset_verifier_dirs(sbx)
        step.rewards = harbor_rewards(result)
        step.passed, step.reward, step.error = result.passed, result.reward, result.error
        step.explanation = cap_output(result.explanation, 4000)
        step.integrity = result.integrity.model_dump() if result.integrity else None
        if save is not None:
            save(record)
        if step.rewards is None:
            step.stopped = f"no verifier result ({result.error})"
            break
        if st.min_reward is not None and (why := min_reward_failure(step.rewards, st.min_reward)):
            step.stopped = why
            break
    if save is not None:
        save(record)
    if artifacts_root.is_dir() and not any(p.is_file() for p in artifacts_root.rglob("*")):
        shutil.rmtree(artifacts_root, ignore_errors=True)
    return record


def trial_result(record: StepsRecord) -> VerifierResult:
    """The sample's verdict from its steps: the trial rewards' `reward`; passed only at 1;
    process is the fraction of the declared steps that passed."""
    rewards = record.rewards
    reward = total_reward(rewards) if rewards else 0.0
    done = sum(1 for s in record.steps if s.passed)
    lines = [f"step {s.name}: rewards={s.rewards} error={s.error}" + (f" (stopped: {s.stopped})" if s.stopped else "")
             for s in record.steps]
    skipped = record.declared[len(record.steps):]
    if skipped:
        lines.append(f"not run: {', '.join(skipped)}")
    lines.append(f"trial ({record.strategy}): {rewards}")
    last = record.steps[-1] if record.steps else None
    error = None if rewards is not None else (last.error if last else "no_steps") or "no_reward"
    return VerifierResult(passed=reward >= 1.0 - 1e-9, reward=reward,
                          process=done / len(record.declared) if record.declared else 0.0,
                          metrics=dict(rewards or {}), error=error,
                          explanation="\n".join(lines) + ("\n\n" + last.explanation if last else ""))
