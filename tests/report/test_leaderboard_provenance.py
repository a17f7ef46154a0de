"""A leaderboard that checks its logs against themselves: the header must say what the samples
did, and a log backs one entry only. Real `.eval` logs of real `inspect eval` runs (oracle and a
scripted Terminus 2 on hello-world, real Docker sandboxes), edited as a cheating submitter would."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage

from rsr.cli.main import main
from rsr.report.leaderboard import LogValidationError, load_board, load_entries, validate_log

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.docker]


def _solves_hello_world(messages: list[ChatMessage], *_: object) -> ModelOutput:
    content = json.dumps({"analysis": "a", "plan": "write the file", "task_complete": True,
                          "commands": [{"keystrokes": "echo 'Hello, world!' > /app/hello.txt\n",
                                        "duration": 0.5}]})
    out = ModelOutput.from_content("mockllm/model", content)
    out.usage = ModelUsage(input_tokens=300, output_tokens=40, total_tokens=340)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """{oracle, scripted}: one finished `rsr/core` log each (hello-world, one epoch)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from rsr.harness.oracle import oracle
    from rsr.harness.terminus2 import terminus2
    from rsr.suites.inspect_tasks import core

    root = tmp_path_factory.mktemp("provenance")
    out = {}
    for name, solver, model in (
            ("oracle", oracle(), "mockllm/model"),
            ("scripted", terminus2(max_episodes=3), get_model("mockllm/model", custom_outputs=_solves_hello_world))):
        [log] = inspect_eval(core(tasks="hello-world"), solver=solver, model=model, log_dir=str(root / name),
                             display="none")
        assert log.status == "success" and log.results.scores[0].metrics["mean"].value == 1.0
        out[name] = Path(log.location)
    return out


@pytest.fixture
def board(tmp_path: Path) -> Path:
    d = tmp_path / "board"
    d.mkdir()
    (d / "board.yaml").write_text(f"title: provenance board\nreference_agents: true\nsuites:\n  core:\n"
                                  f"    path: {REPO / 'tasks' / 'core'}\n    tasks: [hello-world]\n    min_epochs: 1\n")
    return d


def _edited(src: Path, dest: Path, edit: Callable[[EvalLog], None]) -> Path:
    log = read_eval_log(str(src))
    edit(log)
    write_eval_log(log, str(dest))
    return dest


def test_validate_log_does_accept_the_untouched_runs(runs: dict[str, Path], board: Path) -> None:
    for path in runs.values():
        v = validate_log(path, load_board(board))
        assert v.log.samples_sha256 and v.regrade.status == "not-run"


def test_validate_log_rejects_a_relabelled_header_naming_solver_and_model(
        runs: dict[str, Path], board: Path, tmp_path: Path) -> None:
    def relabel(log: EvalLog) -> None:  # an oracle run passed off as Terminus 2 on a real model
        log.eval.solver, log.eval.model = "rsr/terminus2", "openai/gpt-4o"
        log.plan.steps[0].solver = "rsr/terminus2"

    bad = _edited(runs["oracle"], tmp_path / "relabelled.eval", relabel)
    with pytest.raises(LogValidationError) as e:
        validate_log(bad, load_board(board))
    problems = "\n".join(e.value.problems)
    assert "transcripts ran the solver(s) ['rsr/oracle']" in problems
    assert "agent spans are ['oracle']" in problems
    assert "no sample called any model (the header's model 'openai/gpt-4o' never ran)" in problems


def test_validate_log_rejects_a_forged_run_relabelled_as_another_model(
        runs: dict[str, Path], board: Path, tmp_path: Path) -> None:
    def relabel(log: EvalLog) -> None:  # a scripted "model" passed off as a real one, usage table too
        log.eval.model = "openai/gpt-4o"
        log.stats.model_usage = {"openai/gpt-4o": log.stats.model_usage["mockllm/model"]}

    bad = _edited(runs["scripted"], tmp_path / "forged.eval", relabel)
    with pytest.raises(LogValidationError) as e:
        validate_log(bad, load_board(board))
    problems = "\n".join(e.value.problems)
    assert "eval.model is 'openai/gpt-4o' but the samples' model events called ['mockllm/model']" in problems
    assert "output.model is 'mockllm/model', not the header's 'openai/gpt-4o'" in problems


def test_validate_log_rejects_a_header_naming_another_suite(
        runs: dict[str, Path], board: Path, tmp_path: Path) -> None:
    def resuite(log: EvalLog) -> None:
        log.eval.metadata["suite"] = "tb2"

    bad = _edited(runs["oracle"], tmp_path / "suite.eval", resuite)
    with pytest.raises(LogValidationError, match=r"eval.metadata.suite is 'tb2'"):
        validate_log(bad, load_board(board))


def test_leaderboard_add_rejects_the_same_log_added_twice_under_another_name(
        runs: dict[str, Path], board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = runs["oracle"]
    assert main(["leaderboard", "add", str(log), "--model-name", "Oracle", "--harness", "oracle",
                 "--board", str(board)]) == 0
    assert main(["leaderboard", "add", str(log), "--model-name", "Another", "--harness", "oracle",
                 "--board", str(board)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "already backs entry 'oracle-oracle' (Oracle, core" in err and "same file sha256" in err
    # Re-saved under other bytes (and another file name), the same run is still the same run.
    copy = _edited(log, tmp_path / "copy.eval", lambda _: None)
    assert copy.read_bytes() != log.read_bytes()
    assert main(["leaderboard", "add", str(copy), "--model-name", "Third", "--harness", "oracle",
                 "--board", str(board)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "already backs entry 'oracle-oracle'" in err and "eval id, sample uuids" in err
    assert [e.model_name for e in load_entries(board / "entries")] == ["Oracle"]


def test_leaderboard_page_does_show_model_links_regrade_and_test_board_in_chromium(
        runs: dict[str, Path], board: Path, tmp_path: Path, chromium: str) -> None:
    assert main(["leaderboard", "add", str(runs["scripted"]), "--model-name", "Scripted", "--harness",
                 "terminus2", "--board", str(board)]) == 0
    site = tmp_path / "site"
    assert main(["leaderboard", "build", "--out", str(site), "--board", str(board), "--no-readme"]) == 0
    page = site / "index.html"
    shot = tmp_path / "board.png"
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=2000"]
    dom = subprocess.run([*cmd, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=90,
                         check=True).stdout
    subprocess.run([*cmd, "--window-size=1400,600", f"--screenshot={shot}", page.as_uri()], capture_output=True,
                   timeout=90, check=True)
    assert shot.read_bytes()[:4] == b"\x89PNG"
    assert 'id="test-board"' in dom and "[test board]" in dom
    assert '<code class="model">mockllm/model</code>' in dom  # the model the log records, not the display name
    entry = load_entries(board / "entries")[0]
    stored = entry.suites["core"].log.stored
    assert stored and f'<a class="log" href="{stored}">log</a>' in dom and (site / stored).is_file()
    assert (site / stored).read_bytes() == runs["scripted"].read_bytes()
    assert "regrade: not-run" in dom
