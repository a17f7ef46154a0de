"""Loading the factory's trajectory rows: validation, mixing and the long-trajectory policy."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from training_helpers import TRAJECTORIES, write_jsonl

from rsr.training.config import DatasetConfig
from rsr.training.data import DatasetRowError, fit_to_length, load_dataset, mix
from rsr.training.render import load_chat_template


def _break(rows: list[dict[str, Any]], index: int, how: str) -> list[dict[str, Any]]:
    rows = copy.deepcopy(rows)
    msgs = rows[index]["messages"]
    if how == "role":
        msgs[1]["role"] = "tool"
    elif how == "content":
        del msgs[1]["content"]
    elif how == "content-type":
        msgs[1]["content"] = ["not", "a", "string"]
    elif how == "alternation":
        msgs[2]["role"] = "assistant"
    elif how == "no-messages":
        del rows[index]["messages"]
    elif how == "extra-key":
        msgs[0]["contents"] = "typo"
    return rows


@pytest.mark.parametrize(("how", "problem"), [
    ("role", r"messages.1.role: Input should be 'system', 'user' or 'assistant'"),
    ("content", r"messages.1.content: Field required"),
    ("content-type", r"messages.1.content: Input should be a valid string"),
    ("alternation", r"messages\[2\]: expected role 'user'"),
    ("no-messages", r"messages: Field required"),
    ("extra-key", r"messages.0.contents: Extra inputs are not permitted"),
])
def test_load_dataset_rejects_malformed_row_naming_the_row(
        tmp_path: Path, fixture_rows: list[dict[str, Any]], how: str, problem: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", _break(fixture_rows, 5, how))
    with pytest.raises(DatasetRowError, match=rf"bad.jsonl: row 5: {problem}") as e:
        load_dataset(DatasetConfig(path=path))
    assert e.value.row == 5


def test_load_dataset_rejects_invalid_json_naming_row_and_line(tmp_path: Path) -> None:
    lines = TRAJECTORIES.read_text().splitlines()[:3]
    path = tmp_path / "bad.jsonl"
    path.write_text(lines[0] + "\n\n" + lines[1] + "\n" + lines[2][:50] + "\n")
    with pytest.raises(DatasetRowError, match=r"row 2: line 4 is not valid JSON"):
        load_dataset(DatasetConfig(path=path))


def test_load_dataset_strips_observations_after_the_last_reply(
        tmp_path: Path, fixture_rows: list[dict[str, Any]]) -> None:
    rows = copy.deepcopy(fixture_rows[:2])
    rows[0]["messages"].append({"role": "user", "content": "root@sandbox:/app# "})
    loaded = load_dataset(DatasetConfig(path=write_jsonl(tmp_path / "d.jsonl", rows)))
    assert loaded.trailing_messages_stripped == 1
    assert loaded.rows[0].messages[-1].role == "assistant"
    assert loaded.sha256.startswith("sha256:") and loaded.rows[0].task is not None


def test_load_dataset_does_read_a_datasets_directory(
        tmp_path: Path, fixture_rows: list[dict[str, Any]]) -> None:
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(fixture_rows[:4]).save_to_disk(str(tmp_path / "ds"))
    loaded = load_dataset(DatasetConfig(path=tmp_path / "ds"))
    assert [r.source_trajectory for r in loaded.rows] == [
        r["source_trajectory"] for r in fixture_rows[:4]]


def test_load_dataset_does_read_the_factory_export(
        tmp_path: Path, fixture_rows: list[dict[str, Any]]) -> None:
    pytest.importorskip("datasets")
    from rsr.factory.export import write_dataset

    rows = [{**r, "contamination": None} for r in fixture_rows[:3]]
    write_dataset(rows, tmp_path / "dataset", tmp_path / "dataset.jsonl")
    for path in (tmp_path / "dataset", tmp_path / "dataset.jsonl"):
        loaded = load_dataset(DatasetConfig(path=path))
        assert [r.model_dump(include={"messages"}, exclude_none=True) for r in loaded.rows] == [
            {"messages": r["messages"]} for r in rows]


def test_mix_does_apply_weights_deterministically() -> None:
    a = [[{"role": "user", "content": f"a{i}"}] for i in range(10)]
    b = [[{"role": "user", "content": f"b{i}"}] for i in range(10)]
    rows, counts = mix([(DatasetConfig(path=Path("a"), weight=2.0), a),
                        (DatasetConfig(path=Path("b"), weight=0.5), b)], seed=1)
    assert counts == [20, 5] and len(rows) == 25
    assert rows == mix([(DatasetConfig(path=Path("a"), weight=2.0), a),
                        (DatasetConfig(path=Path("b"), weight=0.5), b)], seed=1)[0]
    assert sum(r[0]["content"].startswith("a") for r in rows) == 20


def _long_rows(fixture_rows: list[dict[str, Any]]):
    from rsr.training.data import HANDOFF_HEAD, TrajectoryRow

    fits, late, handoff = (copy.deepcopy(fixture_rows[i]) for i in range(3))
    late["messages"][4]["content"] += "x" * 3000        # too long only near its end
    # A summarised run: its first context is too long, the one after the hand-off fits.
    m = handoff["messages"]
    m[0]["content"] += "x" * 3000
    m[2] = {"role": "user", "content": f"{HANDOFF_HEAD}\nSummary of the work so far:\nran ls"}
    for r in (fits, late, handoff):
        r["execution_id"] = f"{r['task']}#e"
    return [TrajectoryRow.model_validate(r) for r in (fits, late, handoff)]


def test_fit_to_length_split_splits_at_handoffs_and_never_truncates(
        fixture_rows: list[dict[str, Any]], tiny_tokenizer: Any) -> None:
    rows, stats = fit_to_length(_long_rows(fixture_rows), tiny_tokenizer, load_chat_template(),
                                600, "split", dataset="d")
    # The whole short row, and the context after the hand-off; nothing cut inside a row.
    assert [len(r) for r in rows] == [6, 4]
    assert rows[1][0]["content"].startswith("You are continuing a task")
    assert rows[1] == [m.model_dump(exclude_none=True) for m in
                       _long_rows(fixture_rows)[2].messages[2:]]
    assert (stats.rows_kept, stats.rows_split, stats.rows_dropped_too_long) == (2, 1, 2)
    assert (stats.steps_kept, stats.steps_dropped_too_long) == (3 + 2, 3 + 1)
    assert [(s["row"], s["piece"], s["pieces"]) for s in stats.skipped] == [(1, 0, 1), (2, 0, 2)]
    assert all(s["tokens"] > 600 and s["execution_id"] and s["dataset"] == "d"
               for s in stats.skipped)


def test_fit_to_length_skip_skips_whole_rows_and_reports_them(
        fixture_rows: list[dict[str, Any]], tiny_tokenizer: Any) -> None:
    rows, stats = fit_to_length(_long_rows(fixture_rows), tiny_tokenizer, load_chat_template(),
                                600, "skip")
    assert [len(r) for r in rows] == [6]
    assert (stats.rows_dropped_too_long, stats.steps_dropped_too_long) == (2, 6)
    assert [s["row"] for s in stats.skipped] == [1, 2]
