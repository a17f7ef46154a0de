"""Unit tests of the harness parts that need no sandbox."""

from __future__ import annotations

import json

import pytest

from rsr.harness import prompts
from rsr.harness.context import ContextOverflowError, is_overflow_error
from rsr.harness.protocol import MAX_DURATION, Command, StateMReply, parse_reply
from rsr.harness.statem import StateMHarness, Workflow
from rsr.harness.terminus2 import Terminus2Config, cap_observation
from rsr.harness.tmux import escape_literal, is_key_name


def _json(**fields):
    base = {"analysis": "a", "plan": "p", "commands": []}
    return json.dumps({**base, **fields})


def test_protocol_parses_a_clean_json_reply():
    outcome = parse_reply(_json(commands=[{"keystrokes": "ls\n", "duration": 0.1}],
                                task_complete=True))
    assert outcome.error is None and outcome.warnings == []
    assert outcome.reply.commands[0].keystrokes == "ls\n" and outcome.reply.task_complete


def test_protocol_warns_on_text_around_the_json_object():
    outcome = parse_reply("Sure! " + _json() + " Hope this helps")
    assert outcome.reply is not None
    assert outcome.warnings == ["Extra text outside the JSON object was ignored."]


def test_protocol_autocorrects_missing_closing_braces_and_trailing_commas():
    outcome = parse_reply('{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "x",'
                          ' "duration": 1,},], "task_complete": true')
    assert outcome.reply is not None and outcome.reply.task_complete
    assert any("trailing commas" in w for w in outcome.warnings)
    assert any("appended missing }" in w for w in outcome.warnings)


def test_protocol_rejects_missing_fields_naming_them():
    outcome = parse_reply('{"analysis": "a"}')
    assert outcome.reply is None
    assert outcome.error == "Missing required field(s): plan, commands."


def test_protocol_rejects_wrong_types_naming_the_field():
    outcome = parse_reply(_json(commands=[{"keystrokes": 5}]))
    assert outcome.reply is None and "commands.0.keystrokes" in outcome.error


def test_protocol_rejects_replies_without_json():
    outcome = parse_reply("I think we should run ls")
    assert outcome.reply is None and "No JSON object found" in outcome.error


def test_protocol_caps_duration_and_defaults_it_with_warnings():
    outcome = parse_reply(_json(commands=[{"keystrokes": "a", "duration": 500},
                                          {"keystrokes": "b"}]))
    assert [c.duration for c in outcome.reply.commands] == [MAX_DURATION, 1.0]
    assert len(outcome.warnings) == 2


def test_protocol_parses_xml_replies_verbatim():
    text = ('<response><analysis>look</analysis><plan>go</plan><commands>'
            '<keystrokes duration="0.5">grep "a&b" <f\n</keystrokes>'
            '<keystrokes>C-c</keystrokes></commands>'
            '<task_complete>true</task_complete><next_state>verify</next_state></response>')
    outcome = parse_reply(text, "xml", StateMReply)
    reply = outcome.reply
    assert reply.commands[0].keystrokes == 'grep "a&b" <f\n' and reply.commands[0].duration == 0.5
    assert reply.commands[1].duration == 1.0 and reply.task_complete
    assert reply.next_state == "verify"


def test_protocol_rejects_xml_without_response_element():
    assert "No <response>" in parse_reply("{}", "xml").error


def test_cap_observation_keeps_head_and_tail_within_limit():
    text = "HEAD\n" + "x" * 50_000 + "\nTAIL"
    capped = cap_observation(text, 10_000)
    assert len(capped.encode()) <= 10_000
    assert capped.startswith("HEAD") and capped.endswith("TAIL") and "omitted" in capped
    assert cap_observation("short", 10_000) == "short"


def test_tmux_key_names_are_recognised_only_as_whole_strings():
    assert is_key_name("C-c") and is_key_name("Escape") and is_key_name(" Enter ")
    assert is_key_name("M-x") and is_key_name("F5")
    assert not is_key_name("ls -la\n") and not is_key_name("Enter the room")
    assert not is_key_name("")


def test_tmux_escapes_a_trailing_semicolon():
    assert escape_literal("echo a;") == "echo a\\;"
    assert escape_literal("echo a") == "echo a"


def test_workflow_refuses_done_without_seen_verification():
    flow = Workflow()
    assert flow.check("act", 1) is not None          # must plan first
    flow.move("plan", 1)
    flow.move("act", 2)
    flow.record_commands(2, True)                     # a change at turn 2
    flow.move("verify", 3)
    assert "done needs a verify turn" in flow.check("done", 3)
    flow.record_commands(3, True)                     # verification output read at turn 4
    assert flow.check("done", 4) is None
    flow.move("act", 4)
    flow.record_commands(4, True)                     # a new change invalidates it
    flow.move("verify", 5)
    assert flow.check("done", 5) is not None
    assert "unknown state" in flow.check("celebrate", 5)


def _statem_turn(harness: StateMHarness, turn: int, state: str, *keys: str,
                 complete: bool = False):
    harness.turn = turn
    reply = StateMReply(analysis="a", plan="p", next_state=state, task_complete=complete,
                        commands=[Command(keystrokes=k) for k in keys])
    review = harness.review(reply)
    harness.after_turn(reply)
    return review


def test_statem_refuses_completion_after_commands_typed_in_done():
    harness = StateMHarness(Terminus2Config())
    _statem_turn(harness, 1, "plan")
    _statem_turn(harness, 2, "act", "echo hi > /app/f\n")
    _statem_turn(harness, 3, "verify", "cat /app/f\n")
    # Moving to done is fine, but commands typed on the way are an unverified change.
    review = _statem_turn(harness, 4, "done", "rm /app/f\n", complete=True)
    assert review.run_commands and not review.allow_complete
    assert any("verify again" in note for note in review.notes)
    review = _statem_turn(harness, 5, "done", complete=True)
    assert not review.allow_complete
    _statem_turn(harness, 6, "verify", "ls /app\n")
    assert _statem_turn(harness, 7, "done", complete=True).allow_complete


def test_prompts_render_every_placeholder_and_have_a_stable_digest():
    text = prompts.render(prompts.CONFIRM, terminal_state="$ ls")
    assert "$ ls" in text and "$terminal_state" not in text
    with pytest.raises(KeyError, match="terminal_state"):
        prompts.render(prompts.CONFIRM)
    assert prompts.prompt_digest() == prompts.prompt_digest()
    assert len(prompts.prompt_digest()) == 64


def test_context_overflow_errors_are_recognised_by_message():
    assert is_overflow_error(RuntimeError("This model's maximum context length is 8192"))
    assert not is_overflow_error(RuntimeError("rate limited"))
    assert issubclass(ContextOverflowError, Exception)
