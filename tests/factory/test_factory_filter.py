"""The filter on realistic Terminus 2 histories (no Docker): what counts as control, dedupe
of runs that differ only in sandbox noise, and the deterministic scan of the agent's replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsr.factory import filter as filter_stage
from rsr.factory.config import load_config
from rsr.factory.critique import TaskMaterial, reply_leaks
from rsr.factory.dedupe import Deduper, normalize, normalized_hash
from rsr.factory.ledger import FactoryPaths
from rsr.factory.records import (
    Attempt,
    Execution,
    Runbook,
    RunbookBody,
    Source,
    Verdict,
    content_hash,
    write_rows,
)
from rsr.harness import prompts
from rsr.tasks.load import load_task

CORE = Path(__file__).resolve().parents[2] / "tasks" / "core"
HELLO = "Create a file /app/hello.txt that contains the line: Hello, world!"
BODY = RunbookBody(end_state="/app/hello.txt holds exactly the greeting line of the task.",
                   milestones=["Write the line with single quotes so bash leaves the '!' alone"])


def _reply(analysis: str, commands: list[str], complete: bool = False) -> str:
    return json.dumps({"analysis": analysis, "plan": "Next step.", "task_complete": complete,
                       "commands": [{"keystrokes": c + "\n", "duration": 0.5} for c in commands]})


def hello_run(host: str, *, when: str = "Tue Dec  1 08:03:44 UTC 2026", pid: int = 4711,
              tmp: str = "tmp.Xa81kQ2pLm", analysis: str = "The file has to hold one line.",
              extra: list[str] | None = None) -> list[dict[str, str]]:
    """A realistic hello-world run: prompt, write, a `date` and a background job, confirm."""
    prompt = f"root@{host}:/app# "
    first = prompts.render(prompts.FIRST, reply_format=prompts.render(prompts.FORMAT_JSON),
                           wait_note="", instruction=HELLO, terminal_state=prompt)
    write = ["echo 'Hello, world!' > /app/hello.txt", "cat /app/hello.txt", *(extra or [])]
    obs = (f"{prompt}echo 'Hello, world!' > /app/hello.txt\n{prompt}cat /app/hello.txt\n"
           f"Hello, world!\n{prompt}")
    checks = ["date", "mktemp -p /tmp && sleep 30 &"]
    obs2 = (f"{prompt}date\n{when}\n{prompt}mktemp -p /tmp && sleep 30 &\n[1] {pid}\n"
            f"/tmp/{tmp}\n{prompt}")
    done = _reply("The greeting is in place.", [], complete=True)
    confirm = prompts.render(prompts.CONFIRM, terminal_state=prompt.rstrip())
    return [{"role": "user", "content": first},
            {"role": "assistant", "content": _reply(analysis, write)},
            {"role": "user", "content": obs},
            {"role": "assistant", "content": _reply("Checking the clock.", checks)},
            {"role": "user", "content": obs2},
            {"role": "assistant", "content": done},
            {"role": "user", "content": confirm},
            {"role": "assistant", "content": done}]


def test_normalize_removes_hostnames_times_pids_and_temp_names() -> None:
    a = hello_run("3f2a1b4c5d6e")
    b = hello_run("9c0d8e7f6a5b", when="Wed Dec  2 17:41:09 UTC 2026", pid=8123,
                  tmp="tmp.Qz7Lw0PxNb")
    assert content_hash(a) != content_hash(b)
    assert normalized_hash(a) == normalized_hash(b)
    assert normalize("root@3f2a1b4c5d6e:/app# kill 4711") == "root@<HOST>:/app# kill 4711"
    assert "<TIME>" in normalize("2026-12-01T08:03:44.123Z done")


def test_deduper_separates_near_duplicates_from_different_runs() -> None:
    deduper = Deduper(threshold=0.9)
    first = hello_run("3f2a1b4c5d6e")
    assert deduper.check("a", first, content_hash(first)) is None
    again = hello_run("9c0d8e7f6a5b", pid=99)
    assert deduper.check("b", again, content_hash(again)).how == "normalized"
    # Same approach, one extra check command: a near-duplicate, not byte- or noise-equal.
    near = hello_run("1a2b3c4d5e6f", extra=["wc -l /app/hello.txt"])
    dup = deduper.check("c", near, content_hash(near))
    assert dup is not None and dup.how == "near" and dup.of == "a" and dup.similarity < 1
    # Another way to the same end state is kept.
    other = hello_run("1a2b3c4d5e6f")
    other[1]["content"] = _reply("printf avoids history expansion altogether.",
                                 ["printf '%s\\n' 'Hello, world!' > /app/hello.txt",
                                  "od -c /app/hello.txt | head -3", "ls -l /app"])
    other[2]["content"] = ("root@1a2b3c4d5e6f:/app# printf '%s\\n' 'Hello, world!' > /app/hello.txt"
                           "\n0000000   H   e   l   l   o   ,       w   o   r   l   d   !  \\n\n"
                           "-rw-r--r-- 1 root root 14 Dec  1 08:04 hello.txt\nroot@1a2b3c4d5e6f:/app# ")
    assert deduper.check("d", other, content_hash(other)) is None


def _source(task: str = "hello-world") -> Source:
    return Source(id="s", task=task, task_dir=str(CORE / task), suite="core", harness="statem",
                  epoch=1, reward=1, turns=3, tokens=1, log="l", instruction=HELLO, messages=[],
                  commands=[])


def _execution(eid: str, messages: list[dict[str, str]], passed: bool = True) -> Execution:
    return Execution(id=eid, runbook_id="s#k0", source_id="s", task="hello-world", suite="core",
                     index=0, round=0, passed=passed, reward=float(passed), turns=3, tokens=1,
                     sandbox_seconds=1, log="l", messages=messages)


@pytest.fixture
def cfg(tmp_path: Path):  # noqa: ANN201
    path = tmp_path / "factory.yaml"
    path.write_text("output_dir: out\npool: {suites: [core]}\nmodels: {model: m/x}\n"
                    "filter: {auditor: false}\n")
    cfg = load_config(path)
    paths = FactoryPaths(cfg.output_dir)
    write_rows(paths.stage_file("runbooks"), [Runbook(
        id="s#k0", source_id="s", task="hello-world", candidate=0, accepted=True, body=BODY,
        attempts=[Attempt(round=1, raw="{}", body=BODY, verdict=Verdict(verdict="accept"))])])
    write_rows(paths.stage_file("sources"), [_source()])
    return cfg


def test_filter_keeps_terminus2_messages_and_drops_source_control_and_noise_duplicates(
        cfg) -> None:  # noqa: ANN001
    paths = FactoryPaths(cfg.output_dir)
    statem = hello_run("aa11bb22cc33")
    statem[2]["content"] += "\n\n" + prompts.render(prompts.STATEM_DISPLAY, state="act",
                                                    history="understand>act",
                                                    allowed="act, verify")
    leaky = hello_run("dd44ee55ff66")
    leaky[3]["content"] = _reply("I write the line with single quotes so bash leaves the '!' "
                                 "alone, as planned.", ["date"])
    write_rows(paths.stage_file("executions"), [
        _execution("a", hello_run("3f2a1b4c5d6e")),
        _execution("b", hello_run("9c0d8e7f6a5b", pid=8123, tmp="tmp.Qz7Lw0PxNb")),
        _execution("c", statem),
        _execution("d", leaky),
        _execution("e", hello_run("0a9b8c7d6e5f"), passed=False),
    ])
    decisions, _ = filter_stage.run(cfg, paths)
    by_id = {d.execution_id: d for d in decisions}
    assert by_id["a"].kept  # its confirmation and the confirming reply are no problem
    assert by_id["b"].reasons == ["duplicate after normalising sandbox noise of a"]
    assert by_id["c"].reasons[0].startswith("source-harness control (statem_display)")
    assert any(r.startswith("runbook text (") for r in by_id["d"].reasons)
    assert by_id["e"].reasons == ["failed the verifier (reward 0)"]


GIT = load_task(CORE / "git-recover-lost-work")
TIP = "59f60e776126616d2cf7655fcee7cbf549e18e54"


def _git_run(first_command: str, seen_log: bool) -> list[dict[str, str]]:
    log = (f"{TIP} Add TSV export\nebb8f1ff03a2834334c8985c403081c2c9429033 Describe the project"
           " in the README\n") if seen_log else ""
    return [{"role": "user", "content": "Restore the lost branch in /app/shop.\nroot@c0ffee123456:/app# "},
            {"role": "assistant", "content": _reply("Look at the reflog.",
                                                    ["cd /app/shop && git log -g --format='%H %s'"])},
            {"role": "user", "content": f"{log}root@c0ffee123456:/app/shop# "},
            {"role": "assistant", "content": _reply("Recreate the branch.", [first_command])}]


@pytest.mark.parametrize(("command", "seen", "leaks"), [
    (f"git branch feature/report-export {TIP}", True, False),     # read off the reflog: fine
    (f"git branch feature/report-export {TIP[:8]}", False, True),  # typed from nowhere
    (f"git branch feature/report-export {TIP[:10].upper()}", False, True),
    ("git branch feature/report-export HEAD@{1}", False, False),
])
def test_reply_leaks_flag_hidden_hashes_typed_before_any_output_showed_them(
        command: str, seen: bool, leaks: bool) -> None:
    reasons = reply_leaks(_git_run(command, seen), TaskMaterial.of(GIT))
    assert bool(reasons) == leaks, reasons


@pytest.mark.parametrize(("analysis", "flagged"), [
    ("My guidance says to take the tip from the reflog.", True),
    ("Following the runbook, I recreate the branch next.", True),
    ("The hint I was given mentions the reflog.", True),
    ("Per the private instructions, main goes back one commit.", True),
    ("The reflog shows both commits; the task says not to create new ones.", False),
    ("I was wrong about the branch name; the task names feature/report-export.", False),
    ("Following the reflog, the tip is the 'Add TSV export' commit.", False),
])
def test_reply_leaks_drop_replies_that_mention_private_guidance(analysis: str,
                                                                  flagged: bool) -> None:
    run = _git_run("git status --short", True)
    run[3]["content"] = _reply(analysis, ["git status --short"])
    reasons = reply_leaks(run, TaskMaterial.of(GIT))
    assert any(r.check == "private guidance mentioned" for r in reasons) == flagged, reasons


CSV = load_task(CORE / "csv-region-summary")
OUT = '{"north": {"orders": 2, "units": 13, "revenue": 82.47, "top_product": "Gadget"}}\n'


@pytest.mark.parametrize(("reply_text", "shown_before", "leaks"), [
    ("north should come out at 82.47", False, True),    # the source run's result, untyped yet
    ("north should come out at 82.47", True, False),    # read off the program's output
    ("wait for the script", False, False),
])
def test_reply_leaks_flag_values_the_source_run_produced_before_they_were_computed(
        reply_text: str, shown_before: bool, leaks: bool) -> None:
    source = _source("csv-region-summary")
    source.produced_files = {"/app/out.json": OUT}
    material = TaskMaterial.of(CSV, source)
    observation = ("root@ab12cd34ef56:/app# cat /tmp/o.json\n" + OUT) if shown_before else "$ "
    run = [{"role": "user", "content": CSV.instruction},
           {"role": "assistant", "content": _reply("Run it.", ["./summarize in.csv /tmp/o.json"])},
           {"role": "user", "content": observation},
           {"role": "assistant", "content": json.dumps({
               "analysis": reply_text, "plan": "p", "task_complete": False,
               "commands": [{"keystrokes": "sleep 1\n", "duration": 82.47}]})}]
    assert bool(reply_leaks(run, material)) == leaks
