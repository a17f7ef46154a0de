"""Reports, contamination guard and scripted-model rules, on synthetic records (no Docker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

from rsr.errors import RsrError
from rsr.factory.config import load_config
from rsr.factory.export import EvalIndex, guard, write_dataset
from rsr.factory.records import Execution, Rollout
from rsr.factory.report import complementarity, similarity, upset_plot
from rsr.factory.scripted import Fixture, choose
from rsr.tasks.load import load_task

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "tasks" / "core"


def _rollout(harness: str, task: str, passed: bool) -> Rollout:
    return Rollout(id=f"{harness}~{task}", task=task, task_dir="/x", suite="core", harness=harness,
                   epoch=1, passed=passed, reward=float(passed), turns=3, tokens=10,
                   sandbox_seconds=1.0, log="l")


def test_complementarity_counts_union_exclusive_and_shared_solves(tmp_path: Path) -> None:
    rollouts = [_rollout("terminus2", "a", True), _rollout("statem", "a", True),
                _rollout("rsrt", "a", True), _rollout("statem", "b", True),
                _rollout("terminus2", "b", False), _rollout("rsrt", "c", True),
                _rollout("rsrt", "c", False), _rollout("terminus2", "d", False)]
    comp = complementarity(rollouts)
    assert comp["tasks"] == 4 and comp["union"] == 3 and comp["best_single"] == 2
    assert comp["union_gain"] == 1 and comp["all"] == 1
    assert comp["exactly_one"] == {"rsrt": 1, "statem": 1, "terminus2": 0}
    assert comp["harnesses"]["rsrt"] == {"rollouts": 3, "passed": 2, "solved": 2}
    assert upset_plot(comp, tmp_path / "upset.png").stat().st_size > 1000


def _execution(eid: str, runbook: str, commands: list[str], passed: bool = True) -> Execution:
    reply = json.dumps({"analysis": "", "plan": "", "task_complete": False,
                        "commands": [{"keystrokes": c + "\n", "duration": 0.1} for c in commands]})
    return Execution(id=eid, runbook_id=runbook, source_id="s", task="t", suite="core", index=0,
                     round=0, passed=passed, reward=float(passed), turns=1, tokens=1,
                     sandbox_seconds=1.0, log="l",
                     messages=[{"role": "user", "content": "p"},
                               {"role": "assistant", "content": reply}])


def test_similarity_compares_same_and_different_runbooks() -> None:
    executions = [_execution("1", "r1", ["ls", "cat a", "make"]),
                  _execution("2", "r1", ["ls", "make"]),
                  _execution("3", "r2", ["pwd", "make", "ls"]),
                  _execution("4", "r2", ["x"], passed=False)]
    sim = similarity(executions)
    same, diff = sim["same_runbook"], sim["different_runbooks"]
    assert same == {"pairs": 1, "exact_command_overlap": round(2 / 3, 4),
                    "command_order_similarity": round(2 / 3, 4)}
    # (1,3): sets share ls, make of 4 -> 0.5; LCS 1 of 3. (2,3): 2 of 3 -> 0.667; LCS 1 of 3.
    assert diff["pairs"] == 2
    assert diff["exact_command_overlap"] == round((0.5 + 2 / 3) / 2, 4)
    assert diff["command_order_similarity"] == round(1 / 3, 4)


def _cfg(tmp_path: Path, export: str) -> object:
    path = tmp_path / "factory.yaml"
    path.write_text(f"output_dir: out\npool: {{suites: [core]}}\nmodels: {{model: m/x}}\n"
                    f"export: {export}\n")
    return load_config(path)


def test_contamination_guard_refuses_an_eval_suite_task(tmp_path: Path) -> None:
    index = EvalIndex.build(_cfg(tmp_path, "{eval_suites: [core, tb3]}"))
    assert "tb3" in index.unavailable  # not on this machine: checked by suite name only
    row = {"task_dir": str(CORE / "hello-world"), "suite": "core", "messages": []}
    kept, refused = guard([row], index, allow=False)
    assert kept == []
    assert "task hello-world is from evaluation suite 'core'" in refused["hello-world"]
    kept, _ = guard([row], index, allow=True)
    assert "evaluation suite 'core'" in kept[0]["contamination"]


def test_contamination_guard_finds_copied_instructions_and_files(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, f"{{eval_suites: [], eval_paths: [{ROOT}/examples/factory-smoke/eval-tasks]}}")
    index = EvalIndex.build(cfg)
    reasons = index.check(load_task(CORE / "largest-files-report"), "core")
    assert any("100% of 8-word shingles" in r for r in reasons)
    assert any("shares file tests/test_largest.py" in r or "shares file tests/test.sh" in r
               for r in reasons)
    assert index.check(load_task(CORE / "hello-world"), "core") == []


PARAPHRASE = """\
Write a script /app/largest.sh, executable, that is invoked as /app/largest.sh DIR N and
outputs the N biggest regular files located anywhere below DIR (recursively, hidden files and
directories included). Requirements:
- Each line holds one file, formatted as <size> TAB <path>, where <size> is the apparent size
  of the file in bytes (as reported by stat -c %s) and <path> is the path relative to DIR
  (without a leading ./).
- Sort by size, largest first; files with the same size are ordered by their relative path in
  ascending byte order (the way LC_ALL=C sort orders them).
- Never follow or list symbolic links; do not list directories or other non-regular files.
- Names of files may contain spaces.
- When DIR contains fewer than N regular files, print them all. Print nothing else to stdout
  and exit with status 0.
There is a sample tree in /srv/data to try it on. The disk here keeps filling up and operators
want a quick reporting tool.
"""


def _eval_task(root: Path, name: str, instruction: str, test_sh: Path) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text(instruction)
    (task / "task.toml").write_text('version = "1.0"\n')
    (task / "environment" / "Dockerfile").write_text(f"FROM debian:bookworm-slim\n# {name}\n")
    (task / "tests" / "test.sh").write_text(test_sh.read_text())
    (task / "tests" / "check.py").write_text(f"print('checks of {name}')\n")
    return task


def test_contamination_guard_catches_a_paraphrased_instruction_and_ignores_boilerplate(
        tmp_path: Path) -> None:
    evals = tmp_path / "evals"
    generic = CORE / "adaptive-quadrature" / "tests" / "test.sh"  # shared by 14 core tasks
    _eval_task(evals, "disk-hogs", PARAPHRASE, generic)
    _eval_task(evals, "unrelated", "Compute the median of the numbers in /data/x.txt and "
                                   "print it with two decimals.", generic)
    index = EvalIndex.build(_cfg(tmp_path, f"{{eval_suites: [], eval_paths: [{evals}]}}"))
    flagged = {}
    for task_dir in sorted(p for p in CORE.iterdir() if (p / "task.toml").is_file()):
        reasons = index.check(load_task(task_dir), "core")
        if reasons:
            flagged[task_dir.name] = reasons
    # Only the paraphrased task is refused, by near-duplicate matching (no 8-word run is
    # shared); the generic test.sh that 14 core tasks and both eval tasks have is no evidence.
    assert list(flagged) == ["largest-files-report"], flagged
    assert len(flagged["largest-files-report"]) == 1
    assert "near-duplicate of evaluation task disk-hogs" in flagged["largest-files-report"][0]


FIXTURE = Fixture.model_validate({"rules": [
    {"role": "executor", "task": "hello-*", "metadata": {"index": 1}, "replies": ["one"]},
    {"role": "executor", "contains": "special", "replies": ["two"]},
    {"role": "executor", "task": "hello-*", "replies": ["a", {"k": 1}]},
]})


def test_scripted_rules_pick_by_metadata_content_and_turn() -> None:
    first = [ChatMessageUser(content="go")]
    assert choose(FIXTURE, "executor", first, {"task_name": "hello-world", "index": 1}, 1,
                  "terminus2") == "one"
    assert choose(FIXTURE, "executor", [ChatMessageUser(content="a special case")],
                  {"task_name": "other"}, 1, None) == "two"
    later = [*first, ChatMessageAssistant(content="a"), ChatMessageUser(content="obs")]
    assert choose(FIXTURE, "executor", later, {"task_name": "hello-world"}, 1, None) == '{"k": 1}'
    with pytest.raises(RsrError, match="no rule for role=planner task=hello-world"):
        choose(FIXTURE, "planner", first, {"task_name": "hello-world"}, 1, None)


def test_export_redacts_api_keys_and_env_secrets_from_dataset_rows(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.factory.records import content_hash

    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-1234567890-secret")
    messages = [{"role": "user", "content": "task"},
                {"role": "assistant", "content": "export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx; "
                                                 "curl -H 'x: tok-1234567890-secret' localhost"}]
    row = {"messages": messages, "task": "t", "content_hash": content_hash(messages)}
    write_dataset([row], tmp_path / "ds", tmp_path / "ds.jsonl")
    text = (tmp_path / "ds.jsonl").read_text()
    assert "sk-abcdefghijklmnopqrstuvwx" not in text and "tok-1234567890-secret" not in text
    written = json.loads(text.splitlines()[0])
    assert "[REDACTED]" in written["messages"][1]["content"]
    assert written["content_hash"] == content_hash(written["messages"]) != row["content_hash"]


def test_planner_sees_the_screen_of_a_confirmation_not_its_wording() -> None:
    from rsr.factory.plan import render_trajectory
    from rsr.harness import prompts

    screen = "root@ab12cd34ef56:/app# cat hello.txt\nHello, world!\nroot@ab12cd34ef56:/app#"
    confirm = prompts.render(prompts.CONFIRM, terminal_state=screen).rstrip("\n")
    reply = json.dumps({"analysis": "a", "plan": "p", "task_complete": True, "commands": []})
    text = render_trajectory([{"role": "user", "content": "prompt"},
                              {"role": "assistant", "content": reply},
                              {"role": "user", "content": confirm}])
    assert screen in text and "Are you sure" not in text
