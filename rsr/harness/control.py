"""Marking harness control messages.

Every message a harness puts in the conversation carries `metadata["rsr"]`, a `TurnMeta`:
its kind, whether it is harness *control* (words the harness injected, as opposed to the task
or the terminal), and, for a user message that mixes control text with a terminal observation,
the `public` content with the control text removed. The RSR compression step and
`rsr.trajectories.messages.public_messages` drop control mechanically from that marking alone.
"""

from __future__ import annotations

from typing import Any, Literal

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser, ModelOutput
from pydantic import BaseModel, ConfigDict

META_KEY = "rsr"

Kind = Literal[
    "first_prompt",     # the opening user message (instruction + terminal state)
    "observation",      # terminal output after a turn
    "reply",            # the model's answer that was parsed and executed
    "invalid_reply",    # a model answer that could not be parsed (control: it is a detour)
    "parse_error",      # feedback about an invalid reply
    "confirm",          # the "are you sure?" question after a first task_complete
    "state_display",    # StateM's workflow state shown with an observation
    "reflection",       # RSRT's failed-verification prompt
    "summary_request", "summary", "questions_request", "questions", "answers_request",
    "answers", "handoff",
]

CONTROL_KINDS: frozenset[str] = frozenset({
    "invalid_reply", "parse_error", "confirm", "state_display", "reflection",
    "summary_request", "summary", "questions_request", "questions", "answers_request",
    "answers", "handoff",
})


class TurnMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Kind
    harness: str
    control: bool
    turn: int | None = None
    public: str | None = None
    """For a control message that also carries an observation: the content without the
    harness's words. None: the whole message is control and is dropped."""
    control_parts: list[str] = []
    """The control text(s) that were added to `public` (for inspection and audits)."""
    timing: dict[str, float] = {}
    usage: dict[str, int] = {}
    started_at: str | None = None
    warnings: list[str] = []


def user_message(content: str, kind: Kind, harness: str, *, turn: int | None = None,
                 public: str | None = None, control_parts: list[str] | None = None,
                 control: bool | None = None) -> ChatMessageUser:
    meta = TurnMeta(kind=kind, harness=harness, turn=turn,
                    control=kind in CONTROL_KINDS if control is None else control,
                    public=public, control_parts=control_parts or [])
    return ChatMessageUser(content=content, metadata={META_KEY: meta.model_dump()})


def assistant_message(output: ModelOutput, kind: Kind, harness: str, *, turn: int | None,
                      timing: dict[str, float], started_at: str,
                      warnings: list[str] | None = None) -> ChatMessageAssistant:
    usage: dict[str, int] = {}
    if output.usage is not None:
        usage = {"input_tokens": output.usage.input_tokens,
                 "output_tokens": output.usage.output_tokens,
                 "total_tokens": output.usage.total_tokens}
    meta = TurnMeta(kind=kind, harness=harness, turn=turn, control=kind in CONTROL_KINDS,
                    timing=timing, usage=usage, started_at=started_at,
                    warnings=warnings or [])
    message = output.message.model_copy(deep=True)
    message.metadata = {**(message.metadata or {}), META_KEY: meta.model_dump()}
    return message


def turn_meta(message: ChatMessage) -> TurnMeta | None:
    raw: Any = (message.metadata or {}).get(META_KEY)
    if not isinstance(raw, dict):
        return None
    return TurnMeta.model_validate(raw)


def is_control(message: ChatMessage) -> bool:
    meta = turn_meta(message)
    return bool(meta and meta.control)


def set_meta(message: ChatMessage, **changes: Any) -> None:
    """Update fields of a message's TurnMeta in place (e.g. mark a reply invalid after parsing)."""
    meta = turn_meta(message)
    if meta is None:
        raise ValueError("message has no rsr metadata")
    updated = meta.model_copy(update=changes)
    if "kind" in changes and "control" not in changes:
        updated.control = updated.kind in CONTROL_KINDS
    message.metadata = {**(message.metadata or {}), META_KEY: updated.model_dump()}
