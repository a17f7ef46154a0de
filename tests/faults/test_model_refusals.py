"""A model call refused for what the agent sent is the agent's failure; one that failed on the
provider's side is infrastructure. The line between them is drawn on the error's text, so the
text of a provider failure must never read as a refusal (a port or a count that happens to be
400 is no HTTP 400)."""

from __future__ import annotations

import pytest

from rsr.verify.outcome import request_rejected

REFUSED = [
    "Error code: 400 - {'object': 'error', 'message': \"This model's maximum context length is "
    "4096 tokens. However, you requested 4120 tokens\", 'type': 'BadRequestError'}",
    "Error code: 400 - {'error': {'message': 'messages: roles must alternate'}}",
    "HTTP 400: {'detail': 'unparsable request'}",
    "status_code=400 body=...",
    "prompt is too long: 210000 tokens > 200000 maximum",
]
PROVIDER = [
    "Connection error.",
    "APIConnectionError: cannot reach http://127.0.0.1:34001/v1/chat/completions",
    "Request timed out after 400 seconds",
    "Error code: 500 - the engine died after generating 400 tokens",
    "Error code: 503 - {'message': 'engine is restarting (retry in 4000 ms)'}",
]


@pytest.mark.parametrize("text", REFUSED)
def test_an_http_400_or_an_overlong_prompt_is_the_agents_refused_request(text: str) -> None:
    assert request_rejected(text)


@pytest.mark.parametrize("text", PROVIDER)
def test_a_provider_failure_mentioning_400_is_not_read_as_a_refusal(text: str) -> None:
    assert not request_rejected(text)
