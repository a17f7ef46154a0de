"""rsr/oracle on a real core task in Docker."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from harness_scripted import passed, run, task_copy

from rsr.harness.oracle import oracle

pytestmark = pytest.mark.docker


def test_oracle_says_in_the_score_that_a_task_has_no_solve_sh(tmp_path: Path) -> None:
    # The sample scores 0; the reason used to be in the transcript only.
    root = task_copy(tmp_path)
    shutil.rmtree(root / "hello-world" / "solution")
    sample = run(oracle(), [], root=root)
    score = next(iter(sample.scores.values()))
    assert passed(sample) == 0.0
    assert score.metadata["agent_end_reason"] == "no_solution"
    where = (root / "hello-world" / "solution").resolve()
    assert score.explanation.startswith(f"rsr/oracle: task hello-world has no solution/solve.sh (looked in "
                                        f"{where}): nothing was run"), score.explanation
