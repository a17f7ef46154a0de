"""rsr/terminus2 on real core tasks in Docker, with a scripted model."""

from __future__ import annotations

import pytest
from harness_scripted import (
    WRITE_HELLO,
    WRITE_WRONG,
    kinds,
    output,
    passed,
    reply,
    run,
    task_copy,
)
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.solver import SolverSpec

from rsr.harness import prompts
from rsr.harness.control import turn_meta
from rsr.harness.prompts.pack import prompt_pack
from rsr.harness.terminus2 import STORE_RESULT, STORE_SETTINGS, terminus2

pytestmark = pytest.mark.docker


def test_terminus2_passes_hello_world_after_double_confirmation():
    sample = run(terminus2(wait_mode="adaptive", temperature=0.3), [
        reply(WRITE_HELLO),
        reply(("cat /app/hello.txt\n", 1.0), complete=True),
        reply(complete=True),
    ])
    assert passed(sample) == 1.0
    assert kinds(sample) == ["first_prompt", "reply", "observation", "reply", "confirm",
                             "reply"]
    # The first task_complete was answered with the terminal state and a question, not ended.
    confirm = sample.messages[4]
    assert "Hello, world!" in confirm.text and "Are you sure?" in confirm.text
    assert turn_meta(confirm).public.strip().endswith("#")  # observation without the question
    settings = sample.store[STORE_SETTINGS]
    assert settings["temperature"] == 0.3 and settings["wait_mode"] == "adaptive"
    assert settings["prompt_version"] == prompts.PROMPT_VERSION
    assert sample.store[STORE_RESULT]["end_reason"] == "completed"
    first = sample.messages[0].text
    assert "Create a file /app/hello.txt" in first and "Current terminal state:" in first


def test_terminus2_failing_run_is_scored_as_failure():
    sample = run(terminus2(wait_mode="adaptive"), [
        reply(WRITE_WRONG), reply(complete=True), reply(complete=True)])
    assert sample.error is None
    assert passed(sample) == 0.0


def test_terminus2_recovers_from_parse_errors_and_autocorrects():
    truncated = reply(WRITE_HELLO)[:-1]  # missing the final brace: auto-corrected
    sample = run(terminus2(wait_mode="adaptive"), [
        "I will now write the file, here is my plan without JSON.",
        truncated,
        reply(complete=True),
        reply(complete=True),
    ])
    assert kinds(sample)[:5] == ["first_prompt", "invalid_reply", "parse_error", "reply",
                                 "observation"]
    words = prompt_pack("rsr")
    assert words.render("json_no_json") in sample.messages[2].text
    assert words.render("auto_corrected", fix=words.render("json_fix_brace")) in \
        sample.messages[4].text
    assert passed(sample) == 1.0


def test_terminus2_withdrawn_completion_keeps_working():
    sample = run(terminus2(wait_mode="adaptive"), [
        reply(complete=True),          # premature: asked to confirm
        reply(WRITE_HELLO),            # withdraws and works instead
        reply(complete=True),
        reply(complete=True),
    ])
    assert kinds(sample).count("confirm") == 2
    assert passed(sample) == 1.0


def test_terminus2_xml_replies_run_through_the_registered_solver_name(tmp_path):
    xml = ("<response><analysis>a</analysis><plan>p</plan><commands>"
           "<keystrokes duration=\"1\">echo 'Hello, world!' > /app/hello.txt\n</keystrokes>"
           "</commands><task_complete>true</task_complete></response>")
    model = get_model("mockllm/model", custom_outputs=[output(xml), output(xml)])
    args = {"reply_format": "xml", "wait_mode": "adaptive"}  # as `-S key=value` on the CLI
    logs = inspect_eval("rsr/core", task_args={"tasks": "hello-world"},
                        solver=SolverSpec("rsr/terminus2", args, args_passed=args),
                        model=model, display="none", log_dir=str(tmp_path))
    sample = logs[0].samples[0]
    assert logs[0].eval.solver == "rsr/terminus2"
    assert "<response>" in sample.messages[0].text
    assert sample.store[STORE_SETTINGS]["reply_format"] == "xml"
    assert passed(sample) == 1.0


def test_terminus2_enforces_task_agent_timeout_then_scores(tmp_path):
    root = task_copy(tmp_path, **{"[agent]\ntimeout_sec = 300": "[agent]\ntimeout_sec = 4"})
    sample = run(terminus2(wait_mode="fixed"), [
        reply(("sleep 30\n", 20.0)), reply(WRITE_HELLO), reply(complete=True)], root=root)
    assert sample.error is None
    assert sample.store[STORE_RESULT]["end_reason"] == "agent_timeout"
    assert sample.store[STORE_RESULT]["elapsed_sec"] < 15
    assert passed(sample) == 0.0


def _summarising_model(turns: list[str], overflow_over: int | None = None):
    """Answers summary/question/answer requests; otherwise plays `turns` in order.

    Reports input tokens as characters/4 (so the harness sees real context growth) and, with
    `overflow_over`, fails like a provider whose context is that many characters.
    """
    script = iter(turns)

    def generate(messages, tools, tool_choice, config) -> ModelOutput:
        size = sum(len(m.text) for m in messages)
        if overflow_over is not None and size > overflow_over:
            return output("", input_tokens=size // 4, stop_reason="model_length")
        last = messages[-1].text
        if "hand-over summary" in last:
            text = "I wrote nothing yet; /app exists. Next: write /app/hello.txt."
        elif "at least five questions" in last:
            text = "1. Does /app/hello.txt exist yet?"
        elif "operator who takes over" in last:
            text = "1. No, it does not exist yet."
        else:
            text = next(script)
        return output(text, input_tokens=size // 4)

    return generate


def test_terminus2_summarises_and_hands_off_under_small_context():
    # A long listing pushes free context under the threshold: summary, questions, answers.
    turns = [reply(("ls -la /usr/bin\n", 0.5)), reply(WRITE_HELLO), reply(complete=True),
             reply(complete=True)]
    sample = run(terminus2(wait_mode="adaptive", context_window=4000,
                           summarise_free_tokens=1500), _summarising_model(turns))
    found = kinds(sample)
    assert {"summary", "questions", "answers", "handoff"} <= set(found)
    # As in the reference: the summary reaches the successor inside the questions prompt,
    # the answers inside the hand-off, each as its own message.
    questions = sample.messages[found.index("questions_request")]
    assert "I wrote nothing yet" in questions.text
    handoff = sample.messages[found.index("handoff")]
    assert "No, it does not exist yet" in handoff.text and "I wrote nothing" not in handoff.text
    assert sample.store[STORE_RESULT]["compactions"][0]["level"] == "summary"
    assert passed(sample) == 1.0


def test_terminus2_degrades_on_context_length_errors_instead_of_failing():
    turns = [reply(("ls /usr/bin\n", 0.5)), reply(WRITE_HELLO), reply(complete=True),
             reply(complete=True)]
    # The first prompt fits; the first observation (a long listing) overflows the context,
    # which is unwound to the first prompt before the summary is asked for.
    sample = run(terminus2(wait_mode="adaptive", context_window=2250, summarise_free_tokens=0),
                 _summarising_model(turns, 9000))
    assert sample.error is None
    compactions = sample.store[STORE_RESULT]["compactions"]
    assert compactions and "context-length error" in compactions[0]["reason"]
    assert passed(sample) == 1.0


def test_terminus2_fails_the_sample_clearly_when_tmux_is_missing_offline(tmp_path):
    root = task_copy(tmp_path)
    (root / "hello-world" / "environment" / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\nWORKDIR /app\n")
    sample = run(terminus2(), [reply(WRITE_HELLO)], root=root)
    assert sample.error is not None
    assert "tmux" in sample.error.message and "no network to install" in sample.error.message


def test_terminus2_stops_after_max_episodes_when_every_reply_is_cut_off():
    cut = reply(WRITE_HELLO)[:40]
    sample = run(terminus2(max_episodes=3),
                 [output(cut, stop_reason="max_tokens") for _ in range(5)])
    assert sample.error is None
    assert sample.store[STORE_RESULT]["end_reason"] == "max_episodes"
    replies = [m for m in sample.messages if m.role == "assistant"]
    assert len(replies) == 3 and all(m.text == cut for m in replies)
    words = prompt_pack("rsr")
    retry = words.render("output_too_long", limit=words.render("output_limit_unknown"))
    assert sum(retry in m.text for m in sample.messages if m.role == "user") == 3
    assert passed(sample) == 0.0  # nothing of a cut-off reply ran
