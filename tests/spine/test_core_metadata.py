"""Static promises of the core suite: metadata complete, shared first image layer (with tmux),
offline, and hidden files never copied into images. No Docker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rsr.tasks.load import LoadedTask, load_dataset
from rsr.tasks.scaffold import CATEGORIES

REPO = Path(__file__).resolve().parents[2]
CORE = load_dataset(REPO / "tasks/core").tasks
SHARED_LAYER = (REPO / "tasks/core/hello-world/environment/Dockerfile").read_text().split("\nWORKDIR")[0]


def test_core_suite_meets_its_size_and_spread() -> None:
    categories = {t.config.category for t in CORE}
    difficulties = [t.config.difficulty for t in CORE]
    assert len(CORE) >= 40 and len(categories) >= 10
    for level in ("easy", "medium", "hard"):
        assert difficulties.count(level) >= len(CORE) // 4, level
    assert sum(1 for t in CORE if t.config.milestones) >= 10


@pytest.mark.parametrize("task", CORE, ids=lambda t: t.name)
def test_core_task_has_complete_metadata(task: LoadedTask) -> None:
    meta = task.config.metadata
    assert task.config.category in CATEGORIES
    assert task.config.difficulty in ("easy", "medium", "hard")
    assert isinstance(meta.get("tags"), list)
    assert meta.get("expert_time_estimate_min") and meta.get("junior_time_estimate_min")
    assert task.config.task.description
    assert task.config.environment.allow_internet is False
    assert task.paths.solve_script.is_file()
    assert not task.warnings, task.warnings


@pytest.mark.parametrize("task", CORE, ids=lambda t: t.name)
def test_core_image_starts_with_the_shared_layer_and_never_copies_hidden_files(task: LoadedTask) -> None:
    dockerfile = task.paths.dockerfile_path.read_text()
    assert dockerfile.startswith(SHARED_LAYER), "first layer must match hello-world's (tmux, cache sharing)"
    for line in dockerfile.splitlines():
        if re.match(r"\s*(COPY|ADD)\b", line, re.I):
            assert not re.search(r"\b(tests|solution)/?(\s|$)", line), line
