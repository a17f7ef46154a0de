"""Context pressure: summarise and hand off, degrading step by step instead of failing.

The ladder (level 0 first; a context-length error during a step moves to the next level):
0. summarise from the whole conversation, then a fresh-context questions pass and an answers pass;
1. drop old turns: summarise from the first prompt plus the last few messages only;
2. no model summary at all: hand off with the instruction and the terminal state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from inspect_ai.model import ChatMessage, ModelOutput

from rsr.harness import prompts
from rsr.harness.control import assistant_message, user_message

# Messages kept (besides the first prompt) when old turns are dropped.
RECENT_MESSAGES = 6
LAST_LEVEL = 2

NO_SUMMARY = ("(No summary is available: the conversation no longer fit in the model's context. "
              "Inspect the terminal and the files to recover the state of the work.)")

_OVERFLOW_MARKERS = ("context length", "context_length", "maximum context", "context window",
                     "too many tokens", "prompt is too long", "input is too long")


class ContextOverflowError(Exception):
    """The model rejected the input as longer than its context."""


def is_overflow_error(error: BaseException) -> bool:
    text = str(error).lower()
    return any(marker in text for marker in _OVERFLOW_MARKERS)


def estimate_tokens(messages: list[ChatMessage]) -> int:
    """Rough count (4 characters a token) for when the provider reports no usage."""
    return sum(len(m.text) // 4 + 4 for m in messages)


def free_tokens(context_window: int | None, used: int) -> int | None:
    return None if context_window is None else context_window - used


Generate = Callable[[list[ChatMessage]], Awaitable[ModelOutput]]
"""Calls the model; raises ContextOverflowError on a context-length error."""


@dataclass
class Handoff:
    text: str
    level: int
    log: list[ChatMessage] = field(default_factory=list)
    """The control messages of the summarisation passes, for the sample's message log."""


async def hand_off(generate: Generate, context: list[ChatMessage], *, level: int,
                   instruction: str, terminal_state: str, reply_format: str,
                   harness: str, turn: int, now: Callable[[], str]) -> Handoff:
    """Condense `context` into a hand-off message, degrading from `level` as needed."""
    log: list[ChatMessage] = []
    summary = ""
    qa = "(none)"
    while level < LAST_LEVEL and not summary:
        base = context if level == 0 else context[:1] + context[1:][-RECENT_MESSAGES:]
        request = user_message(prompts.render(prompts.SUMMARY), "summary_request", harness,
                               turn=turn)
        try:
            started = now()
            output = await generate([*base, request])
        except ContextOverflowError:
            level += 1
            continue
        summary = output.completion.strip()
        log += [request, assistant_message(output, "summary", harness, turn=turn, timing={},
                                           started_at=started)]
        if not summary:
            level += 1
            continue
        qa = await _questions_and_answers(generate, [*base, request, log[-1]], instruction,
                                          summary, terminal_state, harness, turn, now, log)
    if not summary:
        level = LAST_LEVEL
        summary = NO_SUMMARY
    text = prompts.render(prompts.HANDOFF, instruction=instruction, summary=summary, qa=qa,
                          terminal_state=terminal_state, reply_format=reply_format)
    return Handoff(text=text, level=level, log=log)


async def _questions_and_answers(generate: Generate, summarised: list[ChatMessage],
                                 instruction: str, summary: str, terminal_state: str,
                                 harness: str, turn: int, now: Callable[[], str],
                                 log: list[ChatMessage]) -> str:
    # The questions come from a fresh context that sees only the summary, as the successor would.
    ask = user_message(prompts.render(prompts.QUESTIONS, instruction=instruction,
                                      summary=summary, terminal_state=terminal_state),
                       "questions_request", harness, turn=turn)
    try:
        started = now()
        questions_out = await generate([ask])
    except ContextOverflowError:
        return "(none)"
    questions = questions_out.completion.strip()
    log += [ask, assistant_message(questions_out, "questions", harness, turn=turn, timing={},
                                   started_at=started)]
    if not questions:
        return "(none)"
    request = user_message(prompts.render(prompts.ANSWERS, questions=questions),
                           "answers_request", harness, turn=turn)
    try:
        started = now()
        answers_out = await generate([*summarised, request])
    except ContextOverflowError:
        return f"Questions:\n{questions}\n\nAnswers: (unavailable)"
    log += [request, assistant_message(answers_out, "answers", harness, turn=turn, timing={},
                                       started_at=started)]
    return f"Questions:\n{questions}\n\nAnswers:\n{answers_out.completion.strip()}"
