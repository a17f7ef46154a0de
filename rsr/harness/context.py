"""Context pressure: the reference's summarise-and-hand-off, in three model calls.

1. summary: the conversation so far plus the summary request;
2. questions: a fresh context holding only the questions prompt (instruction, summary and the
   current screen), as the successor would see it;
3. answers: the conversation, the summary request and the summary, then the questions.

The conversation then becomes [first prompt, questions prompt, questions] and the next prompt
is the hand-off carrying the answers (separate messages, as in the reference). Any error is
the caller's to catch: the loop falls back to a short summary, then to the bare instruction
and screen (`TerminalHarness._recover_overflow`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ModelOutput

from rsr.harness.control import assistant_message, user_message
from rsr.harness.prompts.pack import PromptPack

_OVERFLOW_MARKERS = ("context length", "context_length", "maximum context", "context window",
                     "too many tokens", "prompt is too long", "input is too long")


class ContextOverflowError(Exception):
    """The model rejected the input as longer than its context."""


def is_overflow_error(error: BaseException) -> bool:
    text = str(error).lower()
    return any(marker in text for marker in _OVERFLOW_MARKERS)


def estimate_tokens(messages: list[ChatMessage]) -> int:
    """Rough count (4 characters a token), when no tokenizer is available."""
    return sum(len(m.text) // 4 + 4 for m in messages)


@cache
def _cl100k() -> Any | None:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # not installed, or not cached and offline (the download fails fast)
        return None


def count_tokens(messages: list[ChatMessage]) -> int:
    """The conversation's size as the reference measures it (LiteLLM's count for OpenAI-style
    models: cl100k tokens, 4 per message for role and framing, 3 for the reply's start);
    4 characters a token when tiktoken's cl100k is unavailable."""
    encoding = _cl100k()
    if encoding is None:
        return estimate_tokens(messages)
    return 3 + sum(4 + len(encoding.encode(m.text, disallowed_special=())) for m in messages)


Generate = Callable[[list[ChatMessage]], Awaitable[ModelOutput]]


@dataclass
class Summarised:
    prompt: str
    """The hand-off prompt (with the answers): the next message the model is sent."""
    context: list[ChatMessage]
    """The conversation after the hand-off: first prompt, questions prompt, questions."""
    log: list[ChatMessage] = field(default_factory=list)
    """The summarisation calls' messages, for the sample's message log (all control)."""


async def summarise(generate: Generate, context: list[ChatMessage], *, words: PromptPack,
                    instruction: str, screen: str, harness: str, turn: int,
                    now: Callable[[], str]) -> Summarised:
    if not context:
        return Summarised(prompt=instruction, context=[])
    log: list[ChatMessage] = []

    async def call(messages: list[ChatMessage], kind: str) -> str:
        started = now()
        output = await generate(messages)
        log.append(messages[-1])
        log.append(assistant_message(output, kind, harness, turn=turn,  # type: ignore[arg-type]
                                     timing={}, started_at=started))
        return output.completion

    summary_request = user_message(words.render("summary", instruction=instruction),
                                   "summary_request", harness, turn=turn)
    summary = await call([*context, summary_request], "summary")
    questions_request = user_message(
        words.render("questions", instruction=instruction, summary=summary, screen=screen),
        "questions_request", harness, turn=turn)
    questions = await call([questions_request], "questions")
    answers_request = user_message(words.render("answers", questions=questions),
                                   "answers_request", harness, turn=turn)
    answers = await call([*context, summary_request, _assistant(summary), answers_request],
                         "answers")
    return Summarised(prompt=words.render("handoff", answers=answers),
                      context=[context[0], questions_request, _assistant(questions)], log=log)


def _assistant(text: str) -> ChatMessageAssistant:
    return ChatMessageAssistant(content=text, source="generate")
