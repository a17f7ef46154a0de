"""Fixtures for the training tests: tiny recipes, the fixture dataset, shared tiny runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

# Nothing in these tests may touch a model hub.
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from training_helpers import (  # noqa: E402
    TRAJECTORIES,
    make_rows,
    recipe_dict,
    write_jsonl,
    write_recipe,
)


@pytest.fixture(scope="session")
def fixture_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TRAJECTORIES.read_text().splitlines()]


@pytest.fixture(scope="session")
def tiny_tokenizer(fixture_rows: list[dict[str, Any]]) -> Any:
    pytest.importorskip("transformers")
    from rsr.training.render import load_chat_template, render_messages
    from rsr.training.tiny import train_tokenizer

    template = load_chat_template()
    texts = [render_messages(r["messages"], chat_template=template) for r in fixture_rows]
    return train_tokenizer(texts, 1024, template)


@pytest.fixture(scope="session")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A brief full fine-tune of the tiny model on the fixture plus two over-long rows."""
    pytest.importorskip("trl")
    from rsr.training.config import TrainRecipe
    from rsr.training.sft import run

    tmp = tmp_path_factory.mktemp("full")
    from rsr.training.data import HANDOFF_HEAD

    rows = make_rows(2, seed=99)
    # A summarised run whose first context is too long (split keeps the context after the
    # hand-off), and one whose end is too long (skipped whole, never truncated).
    rows[0]["messages"][0]["content"] += " padding" * 600
    rows[0]["messages"][2]["content"] = f"{HANDOFF_HEAD}\nSummary of the work so far: ls ran."
    rows[1]["messages"][4]["content"] += " padding" * 600
    for row in rows:
        row["task"] = "core/long-runs"
    long = write_jsonl(tmp / "long.jsonl", rows)
    recipe = recipe_dict(tmp / "run", [TRAJECTORIES, long], data={
        "datasets": [{"path": str(TRAJECTORIES)}, {"path": str(long), "name": "long"}],
        "max_length": 512, "long_trajectories": "split", "mask_check_rows": None,
        "loss_probe_rows": 16, "validation_tasks": ["core/count-lines"]})
    path = write_recipe(tmp / "recipe.yaml", recipe)
    card = run(TrainRecipe.model_validate(recipe), recipe_path=path)
    return tmp / "run", card
