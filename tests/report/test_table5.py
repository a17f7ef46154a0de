"""Table 5 reports from real `.eval` logs (oracle, null and scripted runs on core tasks)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from rsr.cli.main import main
from rsr.report.logs import read_run, read_runs
from rsr.report.table5 import CSV_COLUMNS, build_table5, write_table5

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open() as f:
        return {(r["benchmark"], r["label"]): r for r in csv.DictReader(f)}


def test_read_run_does_name_benchmark_after_task_and_count_errors(log_of) -> None:
    run = read_run(log_of("scripted"))
    assert (run.task, run.benchmark, run.epochs) == ("rsr/core", "core", 3)
    by_task = run.by_task()
    assert sorted(by_task) == ["hello-world", "semver-sort"]
    assert all(s.passed for s in by_task["hello-world"].values())
    errored = list(by_task["semver-sort"].values())
    assert len(errored) == 3 and all(s.error and not s.passed for s in errored)
    m = run.metrics()
    # The model's API failed: scored failures counted as infra `model`, not Inspect errors that
    # drop out of Inspect's headline.
    assert (m.n_errors, m.n_infra, m.infra_by_kind, m.mean, m.pass_at_k, m.solved) == (
        0, 3, {"model": 3}, 0.5, 0.5, 1)


def test_table5_cli_does_write_csv_md_png_with_one_row_per_benchmark_and_label(
        core_runs, tmp_path: Path) -> None:
    out = tmp_path / "report"
    rc = main(["report", "table5", str(core_runs["null"]), str(core_runs["scripted"]),
               str(core_runs["oracle"]), "--out", str(out)])
    assert rc == 0
    rows = _rows(out / "table5.csv")
    with (out / "table5.csv").open() as f:
        assert set(CSV_COLUMNS) <= set(next(csv.reader(f)))
    labels = ["null", "scripted", "oracle"]  # defaults: the folders' names
    benchmarks = ["tb2", "tb3", "tb4", "tbh", "swr100", "lhtb", "core"]
    assert set(rows) == {(b, lab) for b in benchmarks for lab in labels}

    oracle, null, scripted = (rows[("core", lab)] for lab in ("oracle", "null", "scripted"))
    assert float(oracle["pass_at_3"]) == 1.0 and float(oracle["mean"]) == 1.0
    assert float(null["pass_at_3"]) == 0.0 and float(null["process"]) == 0.0
    assert float(scripted["pass_at_3"]) == 0.5 and float(scripted["mean"]) == 0.5
    assert scripted["n_errors"] == "0" and scripted["n_infra"] == "3" and scripted["n_tasks"] == "2"
    assert scripted["n_runs"] == "3" and float(scripted["stderr"]) == pytest.approx(0.5)
    for row in rows.values():
        for col in ("pass_at_3", "mean", "stderr", "process"):
            if row[col] != "":
                assert 0.0 <= float(row[col]) <= 1.0

    # Suites the runs lack are missing, not zero.
    tb2 = rows[("tb2", "oracle")]
    assert tb2["status"] == "missing" and tb2["pass_at_3"] == "" and tb2["mean"] == ""

    md = (out / "table5.md").read_text()
    assert "| Terminal-Bench 2 (TB2) | (89) | missing | missing | missing | 57.0% |" in md
    # A reference agent's number says so beside it, here and in the CSV.
    assert ("| core | 2 | 0.0% (0/2) (rsr/null: null agent, not a model) | 50.0% (1/2) | "
            "100.0% (2/2) (rsr/oracle: reference solution, not a model) |") in md
    assert oracle["agent"] == "rsr/oracle" and oracle["caveats"] == "rsr/oracle: reference solution, not a model"
    assert scripted["caveats"] == ""
    assert "scripted vs null: gained 1: hello-world" in md
    assert "oracle vs scripted: gained 1: semver-sort" in md
    assert "- scripted / core: 3" in md and "simulated provider outage" in md
    assert "#/logs/" in md and "/samples/sample/semver-sort/1/" in md
    assert (out / "table5.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table5_does_use_given_labels_and_paper_columns(core_runs, tmp_path: Path) -> None:
    table = build_table5([core_runs["null"], core_runs["oracle"]], ["Base", "RSR"])
    paths = write_table5(table, tmp_path)
    rows = _rows(paths["csv"])
    assert rows[("tb2", "RSR")]["paper_pass_at_3"] == "0.742"
    assert rows[("lhtb", "Base")]["paper_process"] == "0.21"
    assert rows[("core", "RSR")]["paper_pass_at_3"] == ""


def test_read_runs_does_prefer_the_newest_finished_log(core_runs, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "mixed"
    folder.mkdir()
    for label in ("null", "oracle"):
        for f in core_runs[label].glob("*.eval"):
            shutil.copy(f, folder / f.name)
    runs, notes = read_runs(folder)
    newest = max((read_run(f) for f in folder.glob("*.eval")), key=lambda r: r.created)
    assert runs["core"].path.name == newest.path.name
    assert len(notes) == 1 and "skipped" in notes[0]


def test_table5_does_report_lhtb_process_reward_from_a_real_partial_run(
        lhtb_run, tmp_path: Path) -> None:
    run = read_run(next(lhtb_run["logs"].glob("*.eval")))
    assert (run.task, run.benchmark) == ("rsr/lhtb", "lhtb")
    paths = write_table5(build_table5([lhtb_run["logs"]], ["RSR"]), tmp_path)
    rows = _rows(paths["csv"])
    lhtb = rows[("lhtb", "RSR")]
    assert float(lhtb["process"]) == 0.5 and float(lhtb["pass_at_3"]) == 0.0
    assert float(lhtb["paper_process"]) == 0.29
    md = paths["md"].read_text()
    assert ("| Long-Horizon Terminal Bench (LHTB), process reward | 1 | 0.50 ± 0.00 "
            "(rsr/oracle: reference solution, not a model) | 0.21 | 0.25 | 0.29 |") in md
