"""Eval-set specs (evals/*.yaml) and `rsr eval` resuming through Inspect's eval_set."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsr.errors import TaskFormatError
from rsr.report.evalset import EvalSetConfig, find_spec, load_eval_set

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted((REPO / "evals").glob("*.yaml")), ids=lambda p: p.stem)
def test_load_eval_set_does_accept_every_shipped_spec(path: Path) -> None:
    spec = load_eval_set(path)
    assert spec.name == path.stem and spec.suites


def test_table5_spec_does_cover_every_paper_suite_at_three_epochs() -> None:
    spec = load_eval_set(find_spec("table5"))
    assert [s.benchmark for s in spec.suites] == ["tb2", "tb3", "tb4", "tbh", "swr100", "lhtb"]
    assert spec.epochs == 3 and "pass_at_3" in spec.reducers
    assert spec.limits.time_limit is None  # the tasks' own timeouts apply


def test_load_eval_set_rejects_unknown_key_naming_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text("name: x\nsuites: [{task: rsr/core}]\nepoch: 3\n")
    with pytest.raises(TaskFormatError, match=r"x.yaml: epoch: Extra inputs"):
        load_eval_set(bad)


def test_load_eval_set_rejects_unknown_reducer(tmp_path: Path) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text("name: x\nsuites: [{task: rsr/core}]\nreducers: [mean, pass_at_x]\n")
    with pytest.raises(TaskFormatError, match=r"reducers.*pass_at_<k>"):
        load_eval_set(bad)


def test_eval_set_select_rejects_suite_not_in_spec() -> None:
    spec = EvalSetConfig(name="s", suites=[{"task": "rsr/core"}])
    with pytest.raises(Exception, match="suite\\(s\\) tb9 not in eval set 's'"):
        spec.select(["tb9"])


@pytest.mark.docker
def test_rsr_eval_run_does_resume_without_rerunning_finished_suites(core_runs) -> None:
    import os

    from inspect_ai.log import read_eval_log

    from rsr.cli.main import main

    folder = core_runs["oracle"]
    (before,) = folder.glob("*.eval")
    eval_id = read_eval_log(str(before), header_only=True).eval.eval_id
    old = os.environ.get("INSPECT_DISPLAY")
    os.environ["INSPECT_DISPLAY"] = "none"
    try:
        rc = main(["eval", "run", "core", "--agent", "rsr/oracle", "--model", "mockllm/model",
                   "--log-dir", str(folder), "-T", "tasks=hello-world,semver-sort"])
    finally:
        if old is None:
            os.environ.pop("INSPECT_DISPLAY", None)
        else:
            os.environ["INSPECT_DISPLAY"] = old
    assert rc == 0
    (after,) = folder.glob("*.eval")
    assert after == before
    assert read_eval_log(str(after), header_only=True).eval.eval_id == eval_id


def test_rsr_eval_table5_rejects_unknown_suite_before_running(tmp_path: Path, capsys) -> None:
    from rsr.cli.main import main

    rc = main(["eval", "table5", "--model", "mockllm/model", "--log-dir", str(tmp_path),
               "--suites", "tb2,tb9"])
    assert rc == 2
    assert "tb9 not in eval set 'table5'" in capsys.readouterr().err.replace("\n", " ")
    assert not list(tmp_path.iterdir())


def test_rsr_eval_table5_does_skip_suites_not_on_this_machine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from rsr.cli.main import main

    monkeypatch.setenv("RSR_TASKS_HOME", str(tmp_path / "empty-cache"))
    args = ["eval", "table5", "--model", "mockllm/model", "--log-dir", str(tmp_path / "logs"),
            "--suites", "tb3,tb4"]
    assert main(args) == 2
    captured = capsys.readouterr()
    out = (captured.out + captured.err).replace("\n", " ")
    assert "skipping tb3" in out and "skipping tb4" in out
    assert "none of its suites is available here" in out

    assert main([*args, "--strict"]) == 2
    assert "skipping" not in capsys.readouterr().out
