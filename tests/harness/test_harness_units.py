"""Unit tests of the harness parts that need no sandbox."""

from __future__ import annotations

import pytest

from rsr.harness import prompts
from rsr.harness.context import ContextOverflowError, is_overflow_error
from rsr.harness.protocol import Command, StateMReply
from rsr.harness.statem import StateMHarness, Workflow
from rsr.harness.terminus2 import Terminus2Config
from rsr.harness.tmux import escape_literal


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
