"""A reply's text as the reference's model client hands it over.

Harbor's Terminus 2 reads replies through LiteLLM, which takes reasoning from a
`reasoning_content` (or `reasoning`) field when the server sends one and otherwise splits off
a `<think>` (`<thinking>`, `<budget:thinking>`) block only where the content *starts* with one,
keeping the rest exactly as sent. Inspect's OpenAI-compatible layer removes such a block
wherever it stands and trims the text. The loop parses, and sends back, the reference's text:
it is recovered from the raw response Inspect recorded for the call. Providers whose responses
are not chat completions carry reasoning in their own fields; their text is left as it is.
"""

from __future__ import annotations

import re
from typing import Any

from inspect_ai.model import ChatMessageAssistant, ContentReasoning, ContentText, ModelOutput

_ATTACHMENT = "attachment://"
_LEADING_BLOCK = re.compile(
    r"<(?:think|thinking|budget:thinking)>(.*?)</(?:think|thinking|budget:thinking)>(.*)",
    re.DOTALL)


def client_split(message: dict[str, Any]) -> tuple[str | None, str]:
    """(reasoning, text) of a raw chat-completions message, as the reference's client splits it."""
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    if "reasoning_content" in message or "reasoning" in message or not text:
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        return (reasoning if isinstance(reasoning, str) else None), text
    match = _LEADING_BLOCK.match(text)
    return (match.group(1), match.group(2)) if match else (None, text)


def _raw_message() -> dict[str, Any] | None:
    """The message of the latest model call's raw response, when it is a chat completion."""
    from inspect_ai.event._model import ModelEvent
    from inspect_ai.log._transcript import transcript

    record = transcript()
    events = record.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, ModelEvent):
            response = event.call.response if event.call is not None else None
            choices = response.get("choices") if isinstance(response, dict) else None
            if not (choices and isinstance(choices[0], dict)
                    and isinstance(choices[0].get("message"), dict)):
                return None
            message = dict(choices[0]["message"])
            content = message.get("content")
            if isinstance(content, str) and content.startswith(_ATTACHMENT):
                # The transcript keeps long strings of recorded calls as attachments.
                resolved = record.attachments.get(content.removeprefix(_ATTACHMENT))
                if resolved is None:
                    return None
                message["content"] = resolved
            return message
    return None


def as_reference_client(output: ModelOutput) -> ModelOutput:
    """`output` with its message text (and reasoning) as the reference's client would read it.

    Call right after the generate call that produced `output` (the raw response is the
    transcript's latest model call)."""
    if not output.choices:
        return output
    raw = _raw_message()
    if raw is None:
        return output
    reasoning, text = client_split(raw)
    message = output.choices[0].message
    if text == message.text:
        return output
    content: list[ContentReasoning | ContentText] = []
    if reasoning is not None:
        content.append(ContentReasoning(reasoning=reasoning))
    content.append(ContentText(text=text))
    kept = output.model_copy(deep=True)
    kept.choices[0].message = ChatMessageAssistant(
        content=content, model=message.model, source=message.source,
        tool_calls=message.tool_calls, metadata=message.metadata)  # type: ignore[arg-type]
    kept.completion = text  # a field of its own, set from the message when the output was made
    return kept
