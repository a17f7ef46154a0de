"""The shared renderer and the assistant-token mask."""

from __future__ import annotations

from typing import Any

import pytest
from training_helpers import FIXTURES

from rsr.training.data import MaskCheckError, expected_assistant_mask
from rsr.training.render import END_OF_TURN, load_chat_template, render_messages


def test_render_messages_does_match_transformers_apply_chat_template(
        fixture_rows: list[dict[str, Any]], tiny_tokenizer: Any) -> None:
    msgs = [{"role": "system", "content": "Be brief."}, *fixture_rows[0]["messages"]]
    for gen in (False, True):
        ours = render_messages(msgs, add_generation_prompt=gen)
        theirs = tiny_tokenizer.apply_chat_template(msgs, tokenize=False,
                                                    add_generation_prompt=gen)
        assert ours == theirs


def test_render_messages_prompt_for_each_step_is_a_prefix_of_the_trajectory(
        fixture_rows: list[dict[str, Any]]) -> None:
    msgs = fixture_rows[3]["messages"]
    full = render_messages(msgs)
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            prompt = render_messages(msgs[:i], add_generation_prompt=True)
            assert full.startswith(prompt + m["content"] + END_OF_TURN)


def test_load_chat_template_rejects_unknown_name() -> None:
    from rsr.errors import RsrError

    with pytest.raises(RsrError, match="neither a packaged template"):
        load_chat_template("no-such-template")


def test_assistant_mask_covers_exactly_the_assistant_tokens(
        fixture_rows: list[dict[str, Any]], tiny_tokenizer: Any) -> None:
    template = load_chat_template()
    msgs = fixture_rows[0]["messages"]
    ids, mask = expected_assistant_mask(tiny_tokenizer, template, msgs, END_OF_TURN)
    replies = [m["content"] for m in msgs if m["role"] == "assistant"]
    decode = lambda t: tiny_tokenizer.decode(t, skip_special_tokens=False)  # noqa: E731

    # Each maximal masked span decodes to one reply plus its end token, in order.
    spans, start = [], None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            spans.append(decode(ids[start:i]))
            start = None
    assert spans == [r + END_OF_TURN for r in replies]
    # The unmasked tokens are the rest of the text: prompts, observations, role headers.
    unmasked = decode([t for t, bit in zip(ids, mask, strict=True) if not bit])
    rest = render_messages(msgs)
    for reply in replies:
        rest = rest.replace(reply + END_OF_TURN, "", 1)
    assert unmasked == rest

    # transformers' own mask from the template's generation markers (what TRL trains on)
    # agrees token for token.
    out = tiny_tokenizer.apply_chat_template(msgs, chat_template=template, tokenize=True,
                                             return_dict=True, return_assistant_tokens_mask=True)
    assert list(out["input_ids"]) == ids and list(out["assistant_masks"]) == mask


def test_assistant_mask_rejects_template_that_rewrites_history(
        fixture_rows: list[dict[str, Any]], tiny_tokenizer: Any) -> None:
    # Like Qwen3's stock template, which strips earlier turns' reasoning: the inference prompt
    # is then not a prefix of the training row, and the check must say so.
    template = load_chat_template().replace(
        "{{- message['content'] + '<|im_end|>' -}}",
        "{{- (message['content'] if loop.last else '{}') + '<|im_end|>' -}}")
    with pytest.raises(MaskCheckError, match="not tokenize to a prefix|decode to '{}'"):
        expected_assistant_mask(tiny_tokenizer, template, fixture_rows[0]["messages"],
                                END_OF_TURN)


def test_fixture_is_reproducible_from_its_generator() -> None:
    import json

    from training_helpers import make_rows

    committed = [json.loads(x) for x in (FIXTURES / "trajectories.jsonl").read_text().splitlines()]
    assert committed == make_rows(len(committed))
