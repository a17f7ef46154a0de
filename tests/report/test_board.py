"""Board configuration: loading, pinning and epoch rules (no Docker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsr.cli.main import main
from rsr.errors import TaskFormatError
from rsr.report.leaderboard import load_board, task_set_digest

REPO = Path(__file__).resolve().parents[2]


def _board(tmp_path: Path, text: str) -> Path:
    (tmp_path / "board.yaml").write_text(text)
    return tmp_path


def test_load_board_rejects_unknown_key_naming_file_and_field(tmp_path: Path) -> None:
    board = _board(tmp_path, "suites:\n  core:\n    min_epoch: 3\n")
    with pytest.raises(TaskFormatError, match=r"board.yaml: suites.core.min_epoch"):
        load_board(board)


def test_board_does_require_five_epochs_for_tb2_and_three_elsewhere() -> None:
    board = load_board(REPO / "leaderboards")
    assert board.config.min_epochs("tb2") == 5 and board.config.min_epochs("tb2_1") == 5
    assert board.config.min_epochs("core") == 3 and board.config.min_epochs("lhtb") == 3


def test_board_does_require_strict_integrity_and_only_registered_harnesses() -> None:
    board = load_board(REPO / "leaderboards")
    assert board.config.integrity == "strict" and board.config.harnesses == []
    assert board.config.require_clean_review


def test_leaderboard_pin_does_print_digest_of_the_suite_on_disk(tmp_path: Path, capsys) -> None:
    from rsr.tasks.load import load_task

    board = _board(tmp_path, f"suites:\n  core:\n    path: {REPO / 'tasks' / 'core'}\n"
                             "    tasks: [hello-world]\n")
    assert main(["leaderboard", "pin", "core", "--board", str(board)]) == 0
    task = load_task(REPO / "tasks" / "core" / "hello-world")
    assert capsys.readouterr().out.strip() == task_set_digest([(task.name, task.digest)])


def test_task_set_digest_does_ignore_order_and_see_content() -> None:
    a = task_set_digest([("x", "sha256:1"), ("y", "sha256:2")])
    assert a == task_set_digest([("y", "sha256:2"), ("x", "sha256:1")])
    assert a != task_set_digest([("x", "sha256:1"), ("y", "sha256:3")])


@pytest.mark.parametrize(("mean", "n"), [(1 / 3, 3), (0.0, 1), (1.0, 2), (0.5, 2), (0.9, 40)])
def test_board_score_interval_does_stay_within_0_and_100_percent(mean: float, n: int) -> None:
    # The board used to show mean ± 1.96 standard errors: "33.3% ± 65.3" for one pass in three.
    from rsr.report.site import wilson

    lo, hi = wilson(mean, n)
    assert 0.0 <= lo <= mean <= hi <= 1.0
    assert hi - lo < 1.0


def test_board_readme_table_does_show_an_interval_inside_0_and_100_percent() -> None:
    from rsr.report.leaderboard import SuiteResult
    from rsr.report.site import score_text

    fields = SuiteResult.model_fields
    result = SuiteResult.model_construct(**{name: None for name in fields})
    result.metrics = type("M", (), {"mean": 1 / 3, "n_tasks": 3})()
    assert score_text(result) == "33.3% (95% CI 6.1–79.2)"
