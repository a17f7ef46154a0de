"""Where rollouts are generated, and how the trainer's weights get there between steps.

`CpuEngine`: rsr's policy server in this process, holding its own copy of the policy; the
trainer's weights (a LoRA merged in) are copied into it before every generation.
`VllmEngine`: an OpenAI-compatible `vllm serve` (separate GPUs, or the same ones with
`--gpu-memory-utilization` sized for both); weights are streamed over NCCL with TRL's weight
transfer client (trl.experimental.async_grpo), LoRA merged first. Not exercised on this
machine (no GPU, no vLLM): see docs/rl.md.
"""

from __future__ import annotations

import copy
from typing import Any

from rsr.errors import RsrError
from rsr.rl.config import EngineConfig


def policy_state_dict(model: Any) -> dict[str, Any]:
    """The served model's weights from the trained one: a PEFT model's LoRA merged into the
    base weights, named as in the base model."""
    try:
        from peft import PeftModel
    except ImportError:  # pragma: no cover - peft is part of the [train] extra
        PeftModel = ()  # noqa: N806
    if isinstance(model, PeftModel):
        model.merge_adapter()
        try:
            merged = {}
            for name, tensor in model.state_dict().items():
                if "lora_" in name or ".original_module." in name:
                    continue
                clean = name.removeprefix("base_model.model.").replace(".base_layer", "")
                clean = clean.replace(".modules_to_save.default", "")
                merged[clean] = tensor.detach().clone()
            return merged
        finally:
            model.unmerge_adapter()
    return {k: v.detach() for k, v in model.state_dict().items()}


class CpuEngine:
    def __init__(self, model: Any, tokenizer: Any, cfg: EngineConfig, seed: int) -> None:
        from rsr.rl.policy_server import PolicyServer

        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        self.server = PolicyServer(copy.deepcopy(base), tokenizer, served_name=cfg.served_model_name,
                                   max_new_tokens=cfg.max_new_tokens, seed=seed)
        self.max_tokens: int | None = cfg.max_new_tokens
        self.name = "cpu"

    def __enter__(self) -> CpuEngine:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def push(self, model: Any) -> int:
        self.server.load_weights(policy_state_dict(model))
        return self.server.weights_version


class VllmEngine:
    def __init__(self, cfg: EngineConfig, max_tokens: int) -> None:
        assert cfg.base_url is not None
        self.url = cfg.base_url.rstrip("/")
        self.max_tokens: int | None = max_tokens
        self.name = "vllm"
        self.version = 0
        self._transfer: Any = None

    def __enter__(self) -> VllmEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._transfer is not None:
            self._transfer.destroy()

    @property
    def base_url(self) -> str:
        return self.url

    def push(self, model: Any) -> int:
        try:
            from trl.experimental.async_grpo.vllm_client import VLLMClient
            from trl.experimental.async_grpo.weight_transfer import WeightTransferClient
        except ImportError as e:
            raise RsrError(f"engine.kind vllm needs vllm and TRL's async GRPO extras ({e})") from e
        weights = policy_state_dict(model)
        if self._transfer is None:
            client = VLLMClient(self.url.removesuffix("/v1"))
            self._transfer = WeightTransferClient(client, weight_update_info={
                "names": list(weights),
                "dtype_names": [str(t.dtype).removeprefix("torch.") for t in weights.values()],
                "shapes": [list(t.shape) for t in weights.values()]})
            self._transfer.init_weight_transfer()
        self._transfer.pause()
        try:
            self._transfer.send_weights(iter(weights.items()))
        finally:
            self._transfer.resume()
        self.version += 1
        return self.version


def make_engine(cfg: EngineConfig, model: Any, tokenizer: Any, seed: int,
                max_completion_length: int) -> CpuEngine | VllmEngine:
    if cfg.kind == "cpu":
        return CpuEngine(model, tokenizer, cfg, seed)
    return VllmEngine(cfg, max_completion_length)
