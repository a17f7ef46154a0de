"""`rsr tasks new` writes where the user asks, by default into a folder no suite reads (it used
to write into ./tasks/core, so a user's task silently joined the core suite, Table 5's core row
and the board's core suite)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rsr.cli.main import main
from rsr.suites.registry import resolve_suite_path
from rsr.tasks.load import load_dataset

REPO = Path(__file__).resolve().parents[2]


def _core_names() -> set[str]:
    return {t.name for t in load_dataset(resolve_suite_path("core")).tasks}


def test_tasks_new_does_write_outside_every_suite_by_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # A checkout's working directory: ./tasks/core is what rsr/core runs.
    shutil.copytree(REPO / "tasks" / "core" / "hello-world", tmp_path / "tasks" / "core" / "hello-world")
    monkeypatch.chdir(tmp_path)
    assert main(["tasks", "new", "word-counts"]) in (0, None)
    assert (tmp_path / "my-tasks" / "word-counts" / "task.toml").is_file()
    assert not (tmp_path / "tasks" / "core" / "word-counts").exists()
    assert _core_names() == {"hello-world"}
    out = " ".join(capsys.readouterr().out.split())
    assert "created my-tasks/word-counts" in out
    assert "inspect eval rsr/harbor -T path=my-tasks/word-counts" in out
    assert [t.name for t in load_dataset(tmp_path / "my-tasks").tasks] == ["word-counts"]


def test_tasks_new_does_write_where_a_path_or_root_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["tasks", "new", str(tmp_path / "elsewhere" / "one")]) in (0, None)
    assert main(["tasks", "new", "two", "--root", "tasks/core"]) in (0, None)
    assert (tmp_path / "elsewhere" / "one" / "task.toml").is_file()
    assert _core_names() == {"two"}  # asked for: it joins core
    assert not (tmp_path / "my-tasks").exists()
