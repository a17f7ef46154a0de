"""Multi-step tasks without Docker: each step's view of the task, Harbor's gate and reward strategies.

The runs themselves (both runners, oracle and null agent, per-step rewards) are in
test_harbor_parity.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskfactory import harbor_task

from rsr.tasks.load import load_task
from rsr.verify.steps import StepRecord, harbor_rewards, min_reward_failure, trial_result, trial_rewards
from rsr.verify.verifier import VerifierResult

STEPPED = """
schema_version = "1.4"
[agent]
timeout_sec = 100
user = "nobody"
[verifier]
timeout_sec = 50
[verifier.env]
SHARED = "task"
ONLY_TASK = "t"
[[verifier.collect]]
command = "echo task"
[[steps]]
name = "first"
[steps.agent]
timeout_sec = 7
[[steps]]
name = "second"
[steps.verifier]
timeout_sec = 9
[steps.verifier.env]
SHARED = "step"
[[steps.verifier.collect]]
command = "echo step"
"""


def _stepped(tmp_path: Path) -> Path:
    d = harbor_task(tmp_path, "stepped", toml=STEPPED, extra={
        "steps/first/instruction.md": "First.\n", "steps/second/instruction.md": "Second.\n",
        "tests/helper.py": "shared helper\n", "steps/second/tests/test.sh": "echo step-two\n",
        "steps/second/tests/helper.py": "step helper\n", "steps/first/solution/solve.sh": "echo first\n"})
    (d / "instruction.md").unlink()
    return d


def test_for_step_does_resolve_settings_as_harbor_does(tmp_path: Path) -> None:
    task = load_task(_stepped(tmp_path))
    first, second = task.for_step(0), task.for_step(1)
    assert (first.instruction, second.instruction) == ("First.", "Second.")
    # A step's own timeout wins; unset, the task's applies (not the model's default of 600).
    assert (first.config.agent.timeout_sec, second.config.agent.timeout_sec) == (7, 100)
    assert (first.config.verifier.timeout_sec, second.config.verifier.timeout_sec) == (50, 9)
    assert second.config.agent.user == "nobody"
    assert second.config.verifier.env == {"SHARED": "step", "ONLY_TASK": "t"}
    assert [h.command for h in second.config.verifier.collect] == ["echo task", "echo step"]


def test_for_step_does_lay_the_steps_tests_over_the_shared_ones(tmp_path: Path) -> None:
    task = load_task(_stepped(tmp_path))
    first, second = task.for_step(0).test_files(), task.for_step(1).test_files()
    assert first["/tests/test.sh"].parent.name == "tests" and first["/tests/helper.py"].read_text() == "shared helper\n"
    assert second["/tests/test.sh"].read_text() == "echo step-two\n"
    assert second["/tests/helper.py"].read_text() == "step helper\n"


def test_for_step_does_fall_back_to_the_shared_solution(tmp_path: Path) -> None:
    task = load_task(_stepped(tmp_path))
    assert task.for_step(0).solution_files() == {"/solution/solve.sh": b"echo first\n"}
    assert task.for_step(1).solution_files() == {"/solution/solve.sh": b"echo done > /app/out.txt\n"}


def _steps(*rewards: dict[str, float] | None) -> list[StepRecord]:
    return [StepRecord(name=f"s{i}", rewards=r) for i, r in enumerate(rewards)]


def test_trial_rewards_does_average_per_key_with_one_term_per_declared_step() -> None:
    # A key a step lacks counts 0, and so does a step without a verifier result (Harbor leaves
    # that one out: rsr does not, invariant 5) and a declared step the trial never reached.
    assert trial_rewards(_steps({"reward": 1}, {"reward": 0.5, "extra": 1}, None), "mean") == {
        "extra": 1 / 3, "reward": 0.5}
    assert trial_rewards(_steps({"reward": 1}), "mean", declared=2) == {"reward": 0.5}
    assert trial_rewards(_steps(None), "mean") is None
    assert trial_rewards(_steps({}), "mean") is None


def test_trial_rewards_does_take_the_last_step_verbatim_under_final() -> None:
    assert trial_rewards(_steps({"reward": 1}, {"reward": 0}), "final") == {"reward": 0}
    assert trial_rewards(_steps({"reward": 1}, None), "final") is None


@pytest.mark.parametrize(("rewards", "gate", "fails"), [
    ({"reward": 1.0}, 1.0, False), ({"reward": 0.5}, 1.0, True), (None, 0.0, True),
    ({"reward": 1.0}, {"reward": 1.0, "style": 0.5}, True), ({"reward": 1.0, "style": 0.5}, {"style": 0.5}, False),
])
def test_min_reward_failure_does_gate_like_harbor(rewards: dict[str, float] | None,
                                                  gate: float | dict[str, float], fails: bool) -> None:
    assert (min_reward_failure(rewards, gate) is not None) == fails


def test_harbor_rewards_rejects_results_harbor_would_have_raised_on() -> None:
    missing = VerifierResult(passed=False, reward=0.0, process=0.0, error="missing_reward")
    tampered = VerifierResult(passed=False, reward=0.0, process=0.0, error="tampered", metrics={"reward": 1.0})
    assert harbor_rewards(missing) is None
    assert harbor_rewards(tampered) == {"reward": 0.0}  # rsr's integrity verdict stands


def test_trial_result_does_count_passed_steps_against_the_declared_ones() -> None:
    from rsr.verify.steps import StepsRecord

    record = StepsRecord(strategy="final", declared=["a", "b", "c"], steps=[
        StepRecord(name="a", rewards={"reward": 1.0}, passed=True, reward=1.0),
        StepRecord(name="b", rewards={"reward": 0.0}, stopped="reward=0.0 below min_reward 1.0")])
    result = trial_result(record)
    assert (result.reward, result.passed, result.metrics) == (0.0, False, {"reward": 0.0})
    assert result.process == pytest.approx(1 / 3) and "not run: c" in result.explanation
