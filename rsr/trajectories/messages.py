"""Public messages: a harness run as the plain chat the factory and training consume.

`[{"role": "user"|"assistant", "content": str}, ...]`: the first user message is the Terminus 2
first prompt, assistant turns are the model's raw replies, user turns are terminal observations.
Harness control (marked by `rsr.harness.control`) is removed mechanically: whole control
messages are dropped (a parse-error detour drops the invalid reply with its feedback), and
mixed messages keep only their observation. Every removal is recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from inspect_ai.log import EvalSample
from inspect_ai.model import ChatMessage
from pydantic import BaseModel, ConfigDict

from rsr.harness.control import turn_meta


class Removal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    """Position in the sample's message list."""
    role: str
    kind: str
    action: Literal["dropped", "stripped", "merged"]
    text: str
    """What was removed (the whole message, or the control text cut from it)."""


class PublicMessages(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, str]]
    removed: list[Removal]


def public_messages(sample: EvalSample | Sequence[ChatMessage],
                    keep: Iterable[str] = ()) -> PublicMessages:
    """The public chat of a harness run, with harness control removed.

    Args:
        sample: An Inspect sample (or its messages) produced by an rsr harness. Messages
            without rsr metadata (other agents) are passed through as they are.
        keep: Control kinds to keep verbatim instead (e.g. {"confirm"} to keep Terminus 2's
            confirmation question, which the reference harness also asks at inference).
    """
    source = sample.messages if isinstance(sample, EvalSample) else list(sample)
    kept = set(keep)
    out: list[dict[str, str]] = []
    removed: list[Removal] = []
    for index, message in enumerate(source):
        if message.role not in ("user", "assistant"):
            removed.append(Removal(index=index, role=message.role, kind=message.role,
                                   action="dropped", text=message.text))
            continue
        meta = turn_meta(message)
        content = message.text
        if meta is not None and meta.kind not in kept:
            if meta.control and meta.public is None:
                removed.append(Removal(index=index, role=message.role, kind=meta.kind,
                                       action="dropped", text=content))
                continue
            if meta.public is not None:  # control text mixed into an observation or prompt
                removed.append(Removal(index=index, role=message.role, kind=meta.kind,
                                       action="stripped",
                                       text="\n\n".join(meta.control_parts)))
                content = meta.public
        if out and out[-1]["role"] == message.role == "user":
            # e.g. a reflection after exhausted episodes follows the last observation
            removed.append(Removal(index=index, role="user", kind=meta.kind if meta else "user",
                                   action="merged", text=content))
            out[-1]["content"] = out[-1]["content"].rstrip("\n") + "\n\n" + content
            continue
        out.append({"role": message.role, "content": content})
    return PublicMessages(messages=out, removed=removed)
