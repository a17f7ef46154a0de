"""What the model saw: a harness run as the contexts of its model calls, under Terminus 2.

A training row must be the interface the model meets at inference. Under Terminus 2 that is
the first prompt, the model's replies (invalid ones too), terminal observations, the
parse-error feedback, auto-correction warnings and the "are you sure?" confirmation; after a
summarisation, a fresh context that starts with the hand-off message. So:

- The run is cut into *segments*, one per model context: the first starts with the first
  prompt, each later one with its hand-off message. The summarisation calls themselves
  (summary, questions, answers) are separate contexts and are not part of any segment.
- `strip_source_control=True` removes what only StateM or RSRT show (the workflow state,
  refused-move notes, StateM's extra instructions, RSRT's reflection prompt) and keeps every
  message Terminus 2 shows itself, rebuilt exactly as Terminus 2 would have written it.
  With False (or for a Terminus 2 run) the segments are verbatim.

Messages are `{"role", "content"}` dicts, plus `reasoning_content` on replies whose model
produced reasoning. Every removal is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from inspect_ai.log import EvalSample
from inspect_ai.model import ChatMessage, ContentReasoning
from pydantic import BaseModel, ConfigDict, Field

from rsr.harness import prompts
from rsr.harness.control import TurnMeta, turn_meta
from rsr.trajectories.messages import Removal

SUMMARISATION_KINDS = frozenset({"summary_request", "summary", "questions_request", "questions",
                                 "answers_request", "answers"})
GENERIC_HARNESS = "terminus2"


class Segment(BaseModel):
    """One model context: its messages in order, ending with the last reply made in it."""

    model_config = ConfigDict(extra="forbid")

    index: int
    handoff: bool = Field(description="starts with a hand-off message (after summarisation)")
    messages: list[dict[str, str]]


class ModelView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    segments: list[Segment]
    removed: list[Removal]
    summarisation_calls: int = 0

    @property
    def messages(self) -> list[dict[str, str]]:
        """All segments' messages in order (for audits and similarity, not for training)."""
        return [m for s in self.segments for m in s.messages]


@cache
def _warning_head() -> str:
    return prompts.load(prompts.PARSE_WARNING).split("$")[0]


def _is_terminus2_part(part: str) -> bool:
    return part.startswith(_warning_head())


def reasoning_of(message: ChatMessage) -> str | None:
    if message.role != "assistant" or isinstance(message.content, str):
        return None
    parts = [c.reasoning for c in message.content if isinstance(c, ContentReasoning)
             and c.reasoning]
    return "\n".join(parts) if parts else None


def _as_terminus2(meta: TurnMeta, content: str) -> tuple[str | None, str | None]:
    """(content Terminus 2 would have shown, the source-harness text removed) for a message of
    StateM or RSRT. None content: the message does not exist under Terminus 2."""
    kind = meta.kind
    if kind == "first_prompt":
        return (meta.public, "\n\n".join(meta.control_parts)) if meta.public is not None \
            else (content, None)
    if kind == "reflection":
        return meta.public, "\n\n".join(meta.control_parts) or content
    if kind in ("observation", "state_display", "confirm") and meta.public is not None:
        parts = list(meta.control_parts)
        head = [parts.pop(0)] if kind == "confirm" and parts else []
        own = [p for p in parts if _is_terminus2_part(p)]
        dropped = [p for p in parts if not _is_terminus2_part(p)]
        if head:
            rebuilt = "\n\n".join([*head, *own])
        elif own:
            rebuilt = "\n\n".join([meta.public.rstrip("\n"), *own])
        else:
            rebuilt = meta.public
        return rebuilt, ("\n\n".join(dropped) or None)
    return content, None


def model_view(sample: EvalSample | Sequence[ChatMessage],
               strip_source_control: bool = True) -> ModelView:
    """The segments a harness run's model saw (see the module docstring)."""
    source = sample.messages if isinstance(sample, EvalSample) else list(sample)
    segments: list[Segment] = [Segment(index=0, handoff=False, messages=[])]
    removed: list[Removal] = []
    summarisation = 0
    # After a summary the model's context is Harbor's: [first prompt, questions prompt, its
    # questions], then the hand-off carrying the answers (rsr.harness.context.summarise).
    first_row: dict[str, str] | None = None
    carried: dict[str, dict[str, str]] = {}
    for index, message in enumerate(source):
        if message.role not in ("user", "assistant"):
            removed.append(Removal(index=index, role=message.role, kind=message.role,
                                   action="dropped", text=message.text))
            continue
        meta = turn_meta(message)
        content: str | None = message.text
        if meta is not None and meta.kind in SUMMARISATION_KINDS:
            summarisation += message.role == "assistant"
            if meta.kind in ("questions_request", "questions"):
                carried[meta.kind] = {"role": message.role, "content": message.text}
            continue
        if meta is not None and meta.kind == "handoff":
            head: list[dict[str, str]] = []
            if first_row is not None and {"questions_request", "questions"} <= set(carried):
                head = [dict(first_row), carried["questions_request"], carried["questions"]]
            carried = {}
            segments.append(Segment(index=len(segments), handoff=True, messages=head))
        if meta is not None and strip_source_control and meta.harness != GENERIC_HARNESS:
            assert content is not None
            content, cut = _as_terminus2(meta, content)
            if content is None:
                removed.append(Removal(index=index, role=message.role, kind=meta.kind,
                                       action="dropped", text=cut or message.text))
                continue
            if cut:
                removed.append(Removal(index=index, role=message.role, kind=meta.kind,
                                       action="stripped", text=cut))
        out = segments[-1].messages
        if out and out[-1]["role"] == message.role == "user":
            # RSRT's reflection after exhausted episodes follows the last observation.
            removed.append(Removal(index=index, role="user", kind=meta.kind if meta else "user",
                                   action="merged", text=content))
            out[-1]["content"] = out[-1]["content"].rstrip("\n") + "\n\n" + content
            continue
        row: dict[str, str] = {"role": message.role, "content": content}
        reasoning = reasoning_of(message)
        if reasoning:
            row["reasoning_content"] = reasoning
        out.append(row)
        if first_row is None and message.role == "user":
            first_row = row
    kept = [s for s in segments if any(m["role"] == "assistant" for m in s.messages)]
    for i, s in enumerate(kept):
        s.index = i
    return ModelView(segments=kept, removed=removed, summarisation_calls=summarisation)
