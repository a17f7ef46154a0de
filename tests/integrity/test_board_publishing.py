"""Invariant 8: a board publishes only what it can stand behind.

A loopback OpenAI-compatible "model" on 127.0.0.1 (the only scripted part) answers every task by
typing its reference solution into rsr's Terminus 2, in real Docker sandboxes, and is named like a
frontier model (`openai-api/loopback/gpt-5.5`): no provider list can know it. The board flags the
replay from the transcript and the task's own solution. A run with a hidden prompt
(`private_guidance`) is refused, or published with it on the entry's label, as the board chooses.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rsr.report.leaderboard import LogValidationError, build_entry, load_board, validate_log

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
TASKS = ("hello-world", "semver-sort")


def _loopback() -> object:
    spec = importlib.util.spec_from_file_location("loopback_openai", REPO / "tests/harness/loopback_openai.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules.setdefault("loopback_openai", module)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _typed_solution(task: Path) -> str:
    """solve.sh as keystrokes for an interactive shell (no shebang, no `set -e` to end the shell)."""
    body = (task / "solution" / "solve.sh").read_text()
    return "\n".join(line for line in body.splitlines() if not re.fullmatch(r"#!.*|set -e\s*", line)) + "\n"


def _reply(commands: list[dict[str, object]]) -> str:
    return json.dumps({"analysis": "a", "plan": "p", "commands": commands, "task_complete": True})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    from inspect_ai import eval as inspect_eval

    from rsr.harness.terminus2 import terminus2
    from rsr.suites.inspect_tasks import core

    lb = _loopback()
    root = tmp_path_factory.mktemp("publish")
    scripts = {}
    for kind, names in (("replayed", TASKS), ("guided", TASKS[:1])):
        for name in names:
            task = root / kind / name
            shutil.copytree(REPO / "tasks" / "core" / name, task)
            instruction = task / "instruction.md"
            instruction.write_text(instruction.read_text() + f"\n[scenario: {kind}-{name}]\n")
            scripts[f"{kind}-{name}"] = [lb.Turn(  # type: ignore[attr-defined]
                content=_reply([{"keystrokes": _typed_solution(task), "duration": 1.0}]))]
    done = lb.Turn(content=_reply([]))  # type: ignore[attr-defined]
    old = os.environ.get("LOOPBACK_API_KEY")
    os.environ["LOOPBACK_API_KEY"] = "loopback-dummy"
    try:
        with lb.LoopbackOpenAI(scripts, fallback=done) as server:  # type: ignore[attr-defined]
            replayed, guided = (inspect_eval(
                core(path=str(root / kind)), solver=solver, model="openai-api/loopback/gpt-5.5",
                model_base_url=server.base_url, log_dir=str(root / "logs"), display="none")[0]
                for kind, solver in (("replayed", terminus2()),
                                     ("guided", terminus2(private_guidance="Type the reference solution."))))
    finally:
        if old is None:
            os.environ.pop("LOOPBACK_API_KEY", None)
        else:
            os.environ["LOOPBACK_API_KEY"] = old
    for log, names in ((replayed, TASKS), (guided, TASKS[:1])):
        assert log.status == "success", log.error
        passed = {s.metadata["task_name"]: s.scores["verifier"].value["passed"] for s in log.samples or []}
        assert passed == dict.fromkeys(names, 1.0), passed
    yield {"replayed": Path(replayed.location), "guided": Path(guided.location), "replayed_suite": root / "replayed",
           "guided_suite": root / "guided"}


def _board(root: Path, suite: Path, **extra: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "board.yaml").write_text(yaml.safe_dump({
        "require_clean_review": True, **extra, "suites": {"core": {"path": str(suite), "min_epochs": 1}}}))
    return root


def test_board_rejects_a_model_that_types_the_reference_solution_whatever_it_is_called(runs, tmp_path) -> None:
    with pytest.raises(LogValidationError) as caught:
        validate_log(runs["replayed"], load_board(_board(tmp_path / "b", runs["replayed_suite"])))
    problems = caught.value.problems
    # semver-sort's solution is a whole program: typed, it is a replay. hello-world's is one short
    # command, which honest work types too: never called a replay.
    assert len(problems) == 1, problems
    assert "(semver-sort) passed" in problems[0] and "replays the reference solution" in problems[0]
    # A test board (reference_agents) accepts it, as it accepts rsr/oracle.
    test_board = load_board(_board(tmp_path / "t", runs["replayed_suite"], reference_agents=True))
    assert validate_log(runs["replayed"], test_board).run.model == "openai-api/loopback/gpt-5.5"


def test_board_refuses_or_labels_a_run_with_a_hidden_prompt(runs, tmp_path) -> None:
    with pytest.raises(LogValidationError, match=r"non-default arguments \{'private_guidance': 'Type the refer"):
        validate_log(runs["guided"], load_board(_board(tmp_path / "r", runs["guided_suite"], harness_args="refuse")))
    labelling = load_board(_board(tmp_path / "l", runs["guided_suite"]))  # label: the default
    validated = validate_log(runs["guided"], labelling)
    assert validated.harness_args == {"private_guidance": "Type the reference solution."}
    entry = build_entry([validated], model_name="GPT-5.5", harness="terminus2")
    assert entry.harness == "terminus2 (non-default: private_guidance=Type the reference solution.)"
    from rsr.report.site import readme_table

    assert "non-default: private_guidance=" in readme_table([entry])


def test_nondefault_args_does_see_a_hidden_prompt_the_header_no_longer_names(runs) -> None:
    from inspect_ai.log import read_eval_log

    from rsr.report.agent_checks import nondefault_args

    log = read_eval_log(str(runs["guided"]))
    stores = [s.store for s in log.samples or []]
    found = nondefault_args(log.eval.solver, {}, stores)  # the header's arguments stripped
    assert list(found) == ["private_guidance"] and "hidden prompt" in found["private_guidance"]
    assert nondefault_args("rsr/terminus2", {"max_episodes": 1_000_000, "temperature": None}, []) == {}
    assert nondefault_args("rsr/terminus2", {"temperature": 0.3}, []) == {"temperature": "0.3"}
    long = nondefault_args("myorg/agent", {"system": "x" * 500}, [])
    assert long["system"].startswith("sha256:") and "(500 chars)" in long["system"]
