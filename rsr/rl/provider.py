"""Registers the `rsr-vllm/<served-name>` Inspect provider (rsr.rl.token_api), lazily as
Inspect's own providers are: the OpenAI SDK loads only when such a model is created."""

from __future__ import annotations

from typing import Any

from inspect_ai.model import modelapi


@modelapi(name="rsr-vllm")
def rsr_vllm() -> type[Any]:
    from rsr.rl.token_api import TokenEngineAPI

    return TokenEngineAPI
