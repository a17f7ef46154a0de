"""The whole loop: a tiny model trained here is evaluated by rsr/terminus2 on a core task in a
real Docker sandbox through Inspect's `hf/` provider. It fails the task; the point is that the
checkpoint loads, renders with its saved chat template, and the harness copes with nonsense."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytestmark = [pytest.mark.docker, pytest.mark.slow]

CORE = Path(__file__).resolve().parents[2] / "tasks" / "core"


def test_tiny_checkpoint_runs_terminus2_on_hello_world_and_fails(
        full_run: tuple[Path, Any], tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.agent import as_solver
    from inspect_ai.model import GenerateConfig, get_model

    from rsr.harness.terminus2 import STORE_RESULT, terminus2
    from rsr.suites.inspect_tasks import tasks_task

    final = full_run[0] / "final"
    model = get_model(f"hf/{final}", config=GenerateConfig(max_tokens=48))
    logs = inspect_eval(tasks_task("core", CORE, "hello-world", None),
                        solver=as_solver(terminus2(max_episodes=3, context_window=32_768)),
                        model=model, display="none", log_dir=str(tmp_path / "logs"),
                        fail_on_error=False)
    sample = logs[0].samples[0]
    assert sample.error is None, sample.error
    assert sample.store[STORE_RESULT]["end_reason"] == "max_episodes"
    replies = [m for m in sample.messages if m.role == "assistant"]
    assert len(replies) == 3 and all(m.text for m in replies)
    # Whatever the model said was either parsed or answered with the harness's error prompt.
    kinds = [(m.metadata or {}).get("rsr", {}).get("kind") for m in sample.messages]
    assert kinds[0] == "first_prompt"
    assert set(kinds[1:]) <= {"reply", "invalid_reply", "parse_error", "observation",
                              "confirm", "parse_warning"}, kinds
    score = next(iter(sample.scores.values())).value
    assert score["passed"] == 0.0
