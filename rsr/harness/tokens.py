"""Token-exact records of model calls, for training on what the serving engine produced.

A harness given `record_tokens` appends one `TokenCall` per model call to the sample store
(`STORE_TOKENS`): the prompt token ids, the completion token ids and their logprobs as the
engine returned them (the `rsr-vllm` provider asks vLLM, or rsr's CPU policy server, for them
and puts them in `ModelOutput.metadata[ENGINE_TOKENS]`). A provider that returns no token ids
is named in the record, and the ids are recomputed with the tokenizer given instead
(`source: recomputed`, no logprobs), so a trainer can tell the two apart.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from inspect_ai.model import ChatMessage, ModelOutput
from inspect_ai.util import store
from pydantic import BaseModel, ConfigDict, Field

from rsr.errors import RsrError

STORE_TOKENS = "rsr_tokens"
ENGINE_TOKENS = "rsr_engine_tokens"
ENGINE_ONLY = "engine"
"""`record_tokens="engine"`: record only what the engine returned (no tokenizer to fall back on)."""


class TokenCall(BaseModel):
    """One model call, token by token."""

    model_config = ConfigDict(extra="forbid")

    call: int = Field(description="0-based index of the call within the sample")
    model: str
    source: Literal["engine", "recomputed", "unavailable"]
    """engine: ids and logprobs as the serving engine returned them; recomputed: the
    provider returned none, ids re-derived with the tokenizer (no logprobs); unavailable:
    neither (record_tokens="engine" against a provider without token ids)."""
    prompt_ids: list[int] = Field(default_factory=list)
    completion_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] | None = None
    """Per completion token, as sampled by the engine; None when recomputed."""
    note: str | None = None


def engine_tokens(response: dict[str, Any]) -> dict[str, Any] | None:
    """The token ids and logprobs in a vLLM-style chat completion (`return_token_ids`):
    `prompt_token_ids` at the top, `token_ids` and `logprobs.content` in the first choice."""
    choices = response.get("choices") or []
    prompt = response.get("prompt_token_ids")
    if not choices or prompt is None or choices[0].get("token_ids") is None:
        return None
    choice = choices[0]
    content = (choice.get("logprobs") or {}).get("content")
    logprobs = [float(c["logprob"]) for c in content] if content else None
    ids = [int(t) for t in choice["token_ids"]]
    if logprobs is not None and len(logprobs) != len(ids):
        raise RsrError(f"engine returned {len(ids)} completion token ids but {len(logprobs)}"
                       " logprobs; token-exact training needs one logprob per token")
    return {"prompt_ids": [int(t) for t in prompt], "completion_ids": ids, "logprobs": logprobs}


@cache
def _tokenizer(path: str) -> Any:
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise RsrError("record_tokens with a tokenizer needs transformers (the [train] extra)") from e
    return AutoTokenizer.from_pretrained(path)


def recompute(messages: list[ChatMessage], completion: str, tokenizer_path: str
              ) -> tuple[list[int], list[int]]:
    """Prompt and completion ids re-derived with the model's chat template: a fallback that
    matches the engine only when rendering and tokenisation are deterministic and identical."""
    tok = _tokenizer(tokenizer_path)
    chat = [{"role": m.role, "content": m.text} for m in messages]
    prompt = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
    if isinstance(prompt, dict) or hasattr(prompt, "input_ids"):
        prompt = prompt["input_ids"]
    ids = tok.encode(completion, add_special_tokens=False)
    if tok.eos_token_id is not None:
        ids.append(tok.eos_token_id)
    return [int(t) for t in prompt], [int(t) for t in ids]


def token_call(index: int, messages: list[ChatMessage], output: ModelOutput,
               record_tokens: str) -> TokenCall:
    engine = (output.metadata or {}).get(ENGINE_TOKENS)
    if engine is not None:
        return TokenCall(call=index, model=output.model, source="engine", **engine)
    note = f"provider of {output.model!r} returned no token ids"
    if record_tokens == ENGINE_ONLY:
        return TokenCall(call=index, model=output.model, source="unavailable", note=note)
    prompt, completion = recompute(messages, output.completion, record_tokens)
    return TokenCall(call=index, model=output.model, source="recomputed", prompt_ids=prompt,
                     completion_ids=completion, note=note + f"; recomputed with {record_tokens}")


def record_call(messages: list[ChatMessage], output: ModelOutput, record_tokens: str) -> None:
    """Append this call's record to the sample store (kept in the eval log with the sample)."""
    calls: list[dict[str, Any]] = list(store().get(STORE_TOKENS, []))
    calls.append(token_call(len(calls), messages, output, record_tokens).model_dump())
    store().set(STORE_TOKENS, calls)


def sample_token_calls(sample_store: dict[str, Any]) -> list[TokenCall]:
    """The records of a finished sample (`EvalSample.store`), in call order."""
    return [TokenCall.model_validate(c) for c in sample_store.get(STORE_TOKENS, [])]
