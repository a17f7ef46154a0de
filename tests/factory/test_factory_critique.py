"""Deterministic runbook checks and the `rsr factory critique` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rsr.cli.main import main
from rsr.factory.critique import deterministic_checks, expected_values, parse_verdict
from rsr.factory.records import Source
from rsr.tasks.load import load_task

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "tasks" / "core"
SMOKE = ROOT / "examples" / "factory-smoke.yaml"
RUNBOOKS = yaml.safe_load((ROOT / "examples/factory-smoke/fixture.yaml").read_text())["definitions"]

CLEAN = {"end_state": "/app/hello.txt holds the greeting line from the task.",
         "milestones": ["Write the line", "Show the file"], "checks": ["cat the file"],
         "recovery": [], "pitfalls": []}


def _checks(task: str, runbook: dict | str, source: Source | None = None) -> list[str]:
    raw = runbook if isinstance(runbook, str) else json.dumps(runbook)
    return [str(r) for r in deterministic_checks(load_task(CORE / task), raw, source)[1]]


def _with(**changes: object) -> dict:
    return {**CLEAN, **changes}


def test_critique_accepts_a_clean_runbook() -> None:
    assert _checks("hello-world", CLEAN) == []
    assert _checks("git-recover-lost-work", RUNBOOKS["runbook-git"]) == []


def test_critique_rejects_hidden_test_name_and_expected_value() -> None:
    reasons = _checks("git-recover-lost-work", RUNBOOKS["runbook-git-leaky"])
    assert "verifier leakage: 'check.py' (name of hidden test file tests/check.py)" in reasons
    assert any("59f60e776126616d2cf7655fcee7cbf549e18e54" in r and "only in hidden test" in r
               for r in reasons)


def test_critique_rejects_a_quoted_hidden_test_line() -> None:
    reasons = _checks("hello-world", _with(checks=[
        'print(f"FAIL: expected \'Hello, world!\', found {content!r}")']))
    assert any(r.startswith("verifier leakage:") and "tests/test_hello.py" in r for r in reasons)


def test_critique_rejects_verifier_paths() -> None:
    reasons = _checks("hello-world", _with(checks=["read /logs/verifier/reward.txt"]))
    assert any("path of the hidden verifier" in r for r in reasons)


def test_critique_rejects_reference_solution_lines() -> None:
    reasons = _checks("largest-files-report", RUNBOOKS["runbook-largest-leaky"])
    assert any(r.startswith("answer leakage:") and "reference solution solution/solve.sh" in r
               for r in reasons)


def test_critique_rejects_content_of_files_the_source_produced() -> None:
    produced = {"/app/report.txt": "region north total 1234.50 over 17 orders\n"}
    source = Source(id="s", task="hello-world", task_dir=str(CORE / "hello-world"), suite="core",
                    harness="terminus2", epoch=1, reward=1, turns=1, tokens=1, log="",
                    instruction="", messages=[], commands=[], produced_files=produced)
    reasons = _checks("hello-world", _with(end_state="region north total 1234.50 over 17 "
                                                     "orders is the expected first line"), source)
    assert any("file produced by the source run /app/report.txt" in r for r in reasons)


def test_critique_rejects_a_finished_deliverable_block() -> None:
    script = "cat > /app/x.sh <<'EOF'\n" + "\n".join(f"echo {i}" for i in range(8)) + "\nEOF"
    reasons = _checks("hello-world", _with(milestones=[script]))
    assert any("finished deliverable" in r for r in reasons)


@pytest.mark.parametrize("text,expected", [
    ("Reply with task_complete true twice", "harness control: 'task_complete'"),
    ("Move to next_state verify first", "harness control: 'next_state'"),
    ("Open it with the str_replace_based_edit_tool", "unsupported tool"),
    ("Use the browser tool to read docs", "unsupported tool"),
    ("pip install requests first", "the task sandbox has no network"),
])
def test_critique_rejects_control_and_unsupported_tools(text: str, expected: str) -> None:
    reasons = _checks("hello-world", _with(pitfalls=[text]))
    assert any(expected in r for r in reasons), reasons


def test_critique_rejects_schema_errors_by_field() -> None:
    assert _checks("hello-world", {"end_state": "x"}) == [
        "schema: 'milestones: Field required' (runbook)"]
    assert _checks("hello-world", "no json here") == ["schema: 'no JSON object' (runbook)"]
    assert "schema: 'extra: Extra inputs are not permitted' (runbook)" in _checks(
        "hello-world", _with(extra="x"))


def test_expected_values_ignore_what_the_agent_can_see() -> None:
    values = expected_values({"check.py": 'want = "Hello, world!"\nsha = "0badc0ffee12"\n'},
                             public="Create a file with: Hello, world!")
    assert values == {"0badc0ffee12": "check.py"}


def test_model_verdict_parsing_rejects_garbage() -> None:
    assert parse_verdict('{"verdict": "accept", "reasons": []}').verdict == "accept"
    bad = parse_verdict("looks fine to me")
    assert bad.verdict == "reject" and "not a verdict object" in bad.reasons[0]


def test_critique_cli_prints_one_json_verdict(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    runbook = tmp_path / "runbook.json"
    runbook.write_text(json.dumps(RUNBOOKS["runbook-git-leaky"]))
    code = main(["factory", "critique", str(CORE / "git-recover-lost-work"), str(runbook),
                 "--deterministic-only"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["verdict"] == "reject"
    assert any("check.py" in r for r in out["reasons"])

    runbook.write_text(json.dumps(RUNBOOKS["runbook-git"]))
    assert main(["factory", "critique", str(CORE / "git-recover-lost-work"), str(runbook),
                 "--deterministic-only"]) == 0
    assert json.loads(capsys.readouterr().out) == {"verdict": "accept", "reasons": [],
                                                   "stage": "deterministic"}


def test_critique_cli_hands_the_model_critics_verdict_through(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    runbook = tmp_path / "runbook.json"
    runbook.write_text(json.dumps(RUNBOOKS["runbook-hello-grader"]))
    code = main(["factory", "critique", str(CORE / "hello-world"), str(runbook),
                 "--config", str(SMOKE)])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["stage"] == "model"
    assert "grader" in out["reasons"][0]


def test_critique_cli_checks_files_of_the_source_run(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    produced = tmp_path / "produced"
    produced.mkdir()
    (produced / "hello.txt").write_text("a distinctive line the source run wrote: 4f3c2b1a\n")
    runbook = tmp_path / "runbook.json"
    runbook.write_text(json.dumps(_with(checks=[
        "expect: a distinctive line the source run wrote: 4f3c2b1a"])))
    code = main(["factory", "critique", str(CORE / "hello-world"), str(runbook),
                 "--deterministic-only", "--source-files", str(produced)])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert any("file produced by the source run hello.txt" in r for r in out["reasons"])
