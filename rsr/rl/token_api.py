"""`rsr-vllm/<served-name>`: an OpenAI-compatible vLLM server asked for token ids on every call.

Every request asks for `logprobs` and vLLM's `return_token_ids`; the response's
`prompt_token_ids` and the choice's `token_ids` and logprobs are copied, untouched, into
`ModelOutput.metadata[ENGINE_TOKENS]`, which the harnesses record per call
(`record_tokens`), so training never re-tokenises rendered text. rsr's CPU policy server
(`rsr.rl.policy_server`) answers in the same shape. The base URL comes from `-M base_url=...`
or `RSR_VLLM_BASE_URL`; a local server needs no key (`RSR_VLLM_API_KEY` if it does).
"""

from __future__ import annotations

import os
from typing import Any

from inspect_ai.model import GenerateConfig, ModelOutput
from inspect_ai.model._providers.openai_compatible import OpenAICompatibleAPI

from rsr.harness.tokens import ENGINE_TOKENS, engine_tokens

TOKEN_REQUEST: dict[str, Any] = {"return_token_ids": True}


class TokenEngineAPI(OpenAICompatibleAPI):
    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **model_args: Any) -> None:
        super().__init__(model_name=model_name, base_url=base_url,
                         api_key=api_key or os.environ.get("RSR_VLLM_API_KEY") or "none",
                         config=config, service="rsr-vllm", stream=False, **model_args)

    def service_model_name(self) -> str:
        return self.model_name

    async def generate(self, input: Any, tools: Any, tool_choice: Any,
                       config: GenerateConfig) -> Any:
        config = config.merge(GenerateConfig(
            logprobs=True, extra_body={**(config.extra_body or {}), **TOKEN_REQUEST}))
        result = await super().generate(input, tools, tool_choice, config)
        output, call = result if isinstance(result, tuple) else (result, None)
        if isinstance(output, ModelOutput) and call is not None and call.response:
            found = engine_tokens(call.response)
            if found is not None:
                output.metadata = {**(output.metadata or {}), ENGINE_TOKENS: found}
        return result
