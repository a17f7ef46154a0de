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
    assert [s.benchmark for s in spec.suites] == ["tb2", "tb2_1", "tb3", "tb4", "tbh", "swr100", "lhtb"]
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
    # Each skipped public suite says how to fetch it (TB3 and TB4 are on the Harbor hub).
    assert ("`rsr tasks fetch tb4` downloads the Harbor hub dataset terminal-bench/terminal-bench@4.0.0"
            in " ".join(out.split()))
    assert "none of its suites is available here" in out

    assert main([*args, "--strict"]) == 2
    assert "skipping" not in capsys.readouterr().out


def _probe_registry() -> None:
    """A registered task of three samples and a solver that records the arguments it was
    built with, so the test sees what Inspect ran (not what the log header claims)."""
    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import Generate, TaskState, solver

    @task(name="rsrtest/three")
    def three() -> Task:
        return Task(dataset=[Sample(input=f"q{i}", target="a") for i in range(3)])

    @solver(name="rsrtest/record")
    def record(episodes: int = 1_000_000, wait_mode: str = "fixed"):
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.store.set("built_with", {"episodes": episodes, "wait_mode": wait_mode})
            return await generate(state)
        return solve


def test_rsr_eval_run_does_apply_agent_args_and_inspect_run_options(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    from rsr.cli.main import main

    _probe_registry()
    spec = tmp_path / "probe.yaml"
    spec.write_text("name: probe\nsuites: [{task: rsrtest/three}]\nepochs: 1\nreducers: [mean]\n"
                    "agent: rsrtest/record\nagent_args: {episodes: 3, wait_mode: fixed}\n")
    rc = main(["eval", "run", str(spec), "--model", "mockllm/model", "--log-dir",
               str(tmp_path / "logs"), "-S", "wait_mode=adaptive", "--limit", "2",
               "--max-samples", "1", "--temperature", "0.3", "--max-tokens", "77"])
    assert rc == 0
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.samples is not None and len(log.samples) == 2
    built = {s.store["built_with"]["episodes"] for s in log.samples}, \
        {s.store["built_with"]["wait_mode"] for s in log.samples}
    assert built == ({3}, {"adaptive"})
    assert log.eval.solver_args == {"episodes": 3, "wait_mode": "adaptive"}
    assert log.eval.model_generate_config.temperature == 0.3
    assert log.eval.model_generate_config.max_tokens == 77
    assert log.eval.config.max_samples == 1


def test_rsr_eval_run_does_tag_each_log_with_its_agent(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    from rsr.cli.main import main

    _probe_registry()
    spec = tmp_path / "probe.yaml"
    spec.write_text("name: probe\nsuites: [{task: rsrtest/three}]\nepochs: 1\nreducers: [mean]\n"
                    "agent: rsrtest/record\n")
    assert main(["eval", "run", str(spec), "--model", "mockllm/model", "--label", "first",
                 "--log-dir", str(tmp_path / "logs"), "--limit", "1"]) == 0
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file), header_only=True)
    assert sorted(log.eval.tags) == ["first", "probe", "rsrtest/record"]
    assert log.eval.metadata["rsr_agent"] == "rsrtest/record"


def test_rsr_eval_run_refuses_an_unregistered_agent_naming_the_closest_harness(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rsr.cli.main import main

    rc = main(["eval", "run", "core", "--model", "mockllm/model", "--agent", "rsr/terminus3",
               "--log-dir", str(tmp_path / "logs")])
    err = " ".join(capsys.readouterr().err.split())
    assert rc == 2, err
    assert ("--agent rsr/terminus3: no registered agent or solver has that name (did you mean "
            "rsr/terminus2?); rsr's harnesses: rsr/terminus2, rsr/statem, rsr/rsrt, rsr/oracle, rsr/null") in err
    assert not list((tmp_path / "logs").glob("*.eval"))


def test_rsr_eval_table5_refuses_a_typod_task_option_instead_of_skipping_every_suite(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rsr.cli.main import main

    rc = main(["eval", "table5", "--model", "mockllm/model", "-T", "taks=hello-world",
               "--log-dir", str(tmp_path / "logs")])
    err = " ".join(capsys.readouterr().err.split())
    assert rc == 2, err
    assert "rsr/tb2: unknown option -T taks (did you mean -T tasks?)" in err, err


def test_rsr_eval_run_refuses_an_unknown_model_provider_naming_the_closest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rsr.cli.main import main

    rc = main(["eval", "run", "core", "--model", "vlm/foo", "--log-dir", str(tmp_path / "logs")])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert rc == 2, err
    assert "--model vlm/foo: Inspect has no model provider 'vlm' (did you mean vllm/foo?)" in err, err
    assert "Traceback" not in err and len(err) < 1000
    assert not captured.out  # nothing before the one line
    assert not (tmp_path / "logs").exists() or not list((tmp_path / "logs").glob("*.eval"))


def test_rsr_eval_run_rejects_a_log_dir_of_other_tasks_without_naming_options_it_lacks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample

    from rsr.cli.main import main

    logs = tmp_path / "logs"
    inspect_eval(Task(dataset=[Sample(input="hi", target="hi")], name="other"), model="mockllm/model",
                 log_dir=str(logs), display="none")
    rc = main(["eval", "run", "core", "--model", "mockllm/model", "--agent", "rsr/null", "--limit", "1",
               "--log-dir", str(logs)])
    err = " ".join(capsys.readouterr().err.split())
    assert rc == 2, err
    assert f"--log-dir {logs} holds logs of another eval set or of other tasks" in err, err
    assert "use a fresh --log-dir" in err and "allow-dirty" not in err


def test_rsr_eval_run_rejects_an_unknown_spec_without_naming_options_it_lacks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rsr.cli.main import main

    rc = main(["eval", "run", "tabel5", "--model", "mockllm/model", "--log-dir", str(tmp_path)])
    err = " ".join(capsys.readouterr().err.split())
    assert rc == 2, err
    assert "eval-set spec 'tabel5' not found" in err and "did you mean table5?" in err, err
    assert "--spec" not in err
