"""Table 5 arithmetic for cases a two-task core run cannot show (process reward on a
long-horizon suite, missing runs), on logs written with Inspect's log API. No Docker."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalSample,
    EvalSpec,
    write_eval_log,
)
from inspect_ai.scorer import Score

from rsr.report.table5 import build_table5, render_markdown, write_table5


def _log(path: Path, task: str, runs: dict[str, list[tuple[int, float] | None]],
         epochs: int = 3) -> Path:
    """A finished log: runs[task_name][epoch-1] = (passed, process), None = sample absent."""
    samples = [
        EvalSample(id=name, epoch=e + 1, input="x", target="pass",
                   metadata={"task_name": name},
                   scores={"verifier": Score(value={"passed": float(r[0]), "reward": float(r[0]),
                                                    "process": r[1]})})
        for name, rs in runs.items() for e, r in enumerate(rs) if r is not None
    ]
    log = EvalLog(
        status="success",
        eval=EvalSpec(created="2026-11-30T00:00:00+00:00", task=task, model="mockllm/model",
                      dataset=EvalDataset(name=task, samples=len(runs),
                                          sample_ids=list(runs)),
                      config=EvalConfig(epochs=epochs)),
        samples=samples,
    )
    write_eval_log(log, str(path))
    return path


def test_table5_does_report_lhtb_by_mean_process_reward(tmp_path: Path) -> None:
    run = tmp_path / "RSR"
    run.mkdir()
    _log(run / "lhtb.eval", "rsr/lhtb", {
        "a": [(0, 0.5), (0, 0.25), (0, 0.75)],
        "b": [(0, 0.0), (1, 1.0), (0, 0.5)],
    })
    table = build_table5([run])
    md = render_markdown(table, tmp_path)
    # process: task means 0.5 and 0.5 -> 0.50 ± 0.00; the paper's RSR column shows 0.29
    assert ("| Long-Horizon Terminal Bench (LHTB), process reward | 2 | 0.50 ± 0.00 | "
            "0.21 | 0.25 | 0.29 |") in md
    paths = write_table5(table, tmp_path / "out")
    with paths["csv"].open() as f:
        row = next(r for r in csv.DictReader(f) if r["benchmark"] == "lhtb")
    assert float(row["process"]) == pytest.approx(0.5)
    assert float(row["pass_at_3"]) == pytest.approx(0.5)  # b passed once in 3 runs
    assert float(row["paper_process"]) == 0.29


def test_table5_does_count_absent_runs_as_failures(tmp_path: Path) -> None:
    run = tmp_path / "base"
    run.mkdir()
    _log(run / "tb2.eval", "rsr/tb2", {"a": [(1, 1.0), None, None], "b": [None, None, None]})
    m = build_table5([run]).runs[0].metrics["tb2"]
    assert (m.n_tasks, m.n_runs, m.n_missing) == (2, 3, 5)
    assert m.mean == pytest.approx(1 / 6) and m.pass_at_k == pytest.approx(0.5)


def test_build_table5_rejects_duplicate_labels(tmp_path: Path) -> None:
    (tmp_path / "a" / "x").mkdir(parents=True)
    (tmp_path / "b" / "x").mkdir(parents=True)
    with pytest.raises(Exception, match="label 'x' used twice"):
        build_table5([tmp_path / "a" / "x", tmp_path / "b" / "x"])


def test_table5_cli_rejects_malformed_paper_table_naming_file_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from rsr.cli.main import main

    run = tmp_path / "RSR"
    run.mkdir()
    _log(run / "tb2.eval", "rsr/tb2", {"a": [(1, 1.0), (0, 0.0), (1, 1.0)]})
    paper = tmp_path / "paper.yaml"
    paper.write_text("source: mine\ncolumns: [RSR]\nrows:\n  - benchmark: tb2\n"
                     "    title: TB2\n    metric: pass_at_5\n    n_tasks: 1\n"
                     "    values: {RSR: 0.5}\n")
    args = ["report", "table5", str(run), "--paper", str(paper), "--out", str(tmp_path / "o")]
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "paper.yaml: rows.0.metric: Input should be 'pass_at_3', 'mean' or 'process'" in err
    paper.unlink()
    assert main(args) == 2
    assert "paper.yaml: reference table (--paper) not found" in " ".join(
        capsys.readouterr().err.split())
    assert not (tmp_path / "o").exists()


def test_build_table5_rejects_unreadable_log_naming_the_file(tmp_path: Path) -> None:
    from rsr.errors import RsrError

    run = tmp_path / "base"
    run.mkdir()
    (run / "tb2.eval").write_bytes(b"not a zip")
    with pytest.raises(RsrError, match=r"tb2.eval: not a readable Inspect log"):
        build_table5([run])


def test_paper_columns_match_folder_style_labels() -> None:
    from rsr.report.table5 import load_paper_table

    paper = load_paper_table()
    assert paper.column_for("rsr") == "RSR" and paper.column_for("RSR") == "RSR"
    assert paper.column_for("direct") == "Direct SFT" == paper.column_for("direct-sft")
    assert paper.column_for("base") == "Base" and paper.column_for("mine") is None
    assert paper.value("tb2", "pass_at_3", "rsr") == pytest.approx(0.742)


def test_table5_cli_rejects_a_folder_without_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rsr.cli.main import main

    (tmp_path / "empty").mkdir()
    rc = main(["report", "table5", str(tmp_path / "empty"), "--out", str(tmp_path / "report")])
    err = " ".join(capsys.readouterr().err.split())
    assert rc not in (0, None), err
    assert f"{tmp_path / 'empty'}: no .eval logs found" in err, err
    assert not (tmp_path / "report").exists()
