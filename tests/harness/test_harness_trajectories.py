"""Trajectory export: ATIF and public messages from real harness runs."""

from __future__ import annotations

import json

import pytest
from harness_scripted import CORE, WRITE_HELLO, output, reply, run
from inspect_ai.model import ChatMessageUser

from rsr.cli.main import main
from rsr.harness import prompts
from rsr.harness.control import assistant_message, user_message
from rsr.harness.prompts.pack import prompt_pack
from rsr.harness.statem import statem
from rsr.trajectories.atif import ATIF_VERSION, Trajectory
from rsr.trajectories.messages import public_messages
from rsr.trajectories.redact import REDACTED, environment_secrets, redact

SECRET = "sk-rsrtest-0123456789abcdefghij"


@pytest.mark.docker
def test_trajectories_export_atif_and_messages_without_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("RSR_FAKE_API_KEY", SECRET)
    logs = tmp_path / "logs"
    sample = run(statem(wait_mode="adaptive"), [
        "not json",                                               # parse-error detour
        reply(f"echo {SECRET}\n", next_state="understand"),
        reply(next_state="plan"),
        reply(WRITE_HELLO, next_state="act"),
        reply(("cat /app/hello.txt\n", 0.5), next_state="verify"),
        reply(next_state="done", complete=True),
        reply(next_state="done", complete=True),
    ], log_dir=logs)
    log_file = next(logs.glob("*.eval"))

    assert main(["trajectories", "export", str(log_file), "--format", "atif",
                 "--out", str(tmp_path / "atif")]) == 0
    atif_file = next((tmp_path / "atif").glob("*.json"))
    raw = atif_file.read_text()
    assert SECRET not in raw and REDACTED in raw
    trajectory = Trajectory.model_validate_json(raw)
    assert trajectory.schema_version == ATIF_VERSION
    assert trajectory.agent.name == "rsr/statem"
    agent_steps = [s for s in trajectory.steps if s.source == "agent"]
    assert len(agent_steps) == 7
    assert agent_steps[0].extra["rsr_kind"] == "invalid_reply"
    act = agent_steps[3]
    assert act.tool_calls[0].function_name == "bash_command"
    assert act.tool_calls[0].tool_call_id == "call_3_1"  # Harbor's call_<episode>_<n>
    assert act.observation.results[0].source_call_id == "call_3_1"
    assert act.message == "Analysis: a\nPlan: p" and act.extra["task_complete"] is False
    for step in agent_steps:  # every extra key the exporter means to write is there
        assert {"rsr_kind", "rsr_control", "rsr_turn", "task_complete", "rsr_parse_warnings",
                "rsr_parse_error", "observation_kind", "observation_control"} <= set(step.extra)
    assert agent_steps[0].extra["rsr_parse_error"] and agent_steps[0].tool_calls is None
    assert agent_steps[-1].tool_calls[-1].function_name == "mark_task_complete"
    assert act.tool_calls[0].arguments["keystrokes"] == WRITE_HELLO
    assert act.metrics.prompt_tokens == 200 and "timing" in act.metrics.extra
    assert "hello.txt" in act.observation.results[0].content
    assert trajectory.final_metrics.total_completion_tokens == 7 * 40
    assert trajectory.final_metrics.extra["score"]["passed"] == 1

    assert main(["trajectories", "export", str(logs), "--format", "messages",  # a log folder
                 "--out", str(tmp_path / "msgs")]) == 0
    row_text = (tmp_path / "msgs" / "messages.jsonl").read_text()
    assert SECRET not in row_text
    row = json.loads(row_text.splitlines()[0])
    messages = row["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant"] * 6  # ends with the confirming reply
    # The first message is exactly the plain Terminus 2 prompt: no StateM section or display.
    instruction = (CORE / "hello-world" / "instruction.md").read_text()
    screen = messages[0]["content"].split("Current terminal state:\n")[1]
    assert messages[0]["content"].rstrip() == prompt_pack("rsr").render(
        "first_json", instruction=instruction, terminal_state=screen).rstrip()
    assert sample.messages[0].text.startswith(messages[0]["content"])
    public_text = json.dumps([m for m in messages if m["role"] == "user"])
    assert "[workflow]" not in public_text and "next_state" not in public_text
    assert "Are you sure?" not in public_text and "could not be used" not in public_text
    kinds = {r["kind"] for r in row["removed"]}
    assert {"invalid_reply", "parse_error", "state_display", "confirm"} <= kinds
    assert row["source_harness"] == "statem" and row["passed"] is True
    training = pytest.importorskip("rsr.training.data")
    parsed = training.TrajectoryRow.model_validate(row)
    assert training._structure_problem(parsed.messages) is None  # the trainer accepts it
    assert row["prompt_version"] == prompts.PROMPT_VERSION
    assert row["prompt_pack"] == "rsr" and row["prompt_pack_sha256"] == prompt_pack("rsr").sha256

    # --only filters on the verifier's outcome; --keep keeps a control kind verbatim.
    assert main(["trajectories", "export", str(log_file), "--format", "messages",
                 "--only", "failed", "--out", str(tmp_path / "failed")]) == 0
    assert (tmp_path / "failed" / "messages.jsonl").read_text() == ""
    assert main(["trajectories", "export", str(log_file), "--format", "messages",
                 "--only", "passed", "--keep", "confirm", "--out", str(tmp_path / "kept")]) == 0
    kept = json.loads((tmp_path / "kept" / "messages.jsonl").read_text())
    assert "Are you sure?" in json.dumps(kept["messages"])
    assert "confirm" not in {r["kind"] for r in kept["removed"]}


def test_public_messages_drops_detours_and_strips_mixed_control():
    h = "terminus2"
    first = user_message("FIRST", "first_prompt", h, turn=0, control=False)
    bad = assistant_message(output("oops"), "invalid_reply", h, turn=1, timing={},
                            started_at="t")
    feedback = user_message("fix it", "parse_error", h, turn=1)
    good = assistant_message(output("{...}"), "reply", h, turn=2, timing={}, started_at="t")
    confirm = user_message("SCREEN\n\nAre you sure?", "confirm", h, turn=2, public="SCREEN",
                           control_parts=["Are you sure?"])
    final = assistant_message(output("{done}"), "reply", h, turn=3, timing={}, started_at="t")
    public = public_messages([first, bad, feedback, good, confirm, final])
    assert public.messages == [{"role": "user", "content": "FIRST"},
                               {"role": "assistant", "content": "{...}"},
                               {"role": "user", "content": "SCREEN"},
                               {"role": "assistant", "content": "{done}"}]
    assert [(r.kind, r.action) for r in public.removed] == [
        ("invalid_reply", "dropped"), ("parse_error", "dropped"), ("confirm", "stripped")]
    kept = public_messages([first, good, confirm, final], keep={"confirm"})
    assert kept.messages[2]["content"] == "SCREEN\n\nAre you sure?"


def test_public_messages_passes_unmarked_messages_through():
    public = public_messages([ChatMessageUser(content="hi")])
    assert public.messages == [{"role": "user", "content": "hi"}] and not public.removed


def test_redact_removes_env_secrets_and_key_patterns():
    secrets = environment_secrets({"OPENAI_API_KEY": "abcdefgh12345678", "HOME": "/root"})
    assert secrets == ["abcdefgh12345678"]
    data = {"a": ["x abcdefgh12345678 y", "hf_" + "a" * 30], "n": 3}
    assert redact(data, secrets) == {"a": [f"x {REDACTED} y", REDACTED], "n": 3}
