"""Where rollouts are generated, and how the trainer's weights get there between steps.

Every engine takes the trainer's weights as one state dict named as in the base model
(`policy_state_dict`: a LoRA merged in) before every generation:

`DiskSyncEngine` (engine.kind vllm, weight_sync disk; the default): rsr starts vLLM from the
engine environment on the cold-start checkpoint in vLLM's dev mode (`enforce_eager` skips graph
compilation: 0.48x the start-up for the tiny model here, benchmarks/engine_startup.py;
reloads identical), or uses one at base_url that runs in dev mode on this machine. Before each step the weights are
written as safetensors to OUTPUT_DIR/engine-weights/ and the engine reloads them in place
(`/collective_rpc reload_weights` with that weights_path; every worker reads the file), then
its prefix cache is reset so no KV computed with old weights is reused. This runs on CPU here
(tests/rl/test_rl_grpo.py runs `rsr rl` end to end on it), and unchanged on one GPU machine.
`VllmEngine` (base_url set; weight_sync nccl): a `vllm serve` on other GPUs; weights are
streamed over NCCL with TRL's weight transfer client (trl.experimental.async_grpo). Needs
GPUs: the documented production path (docs/rl.md), not run on this machine.
`CpuEngine` (engine.kind cpu): rsr's in-process policy server, the same request and response
shapes, so the same rollout code runs on it. It stays only where vLLM cannot run, and for
tests that need an engine but not vLLM:
  - no vLLM build for the machine: vLLM runs on Linux only; macOS has no prebuilt wheel
    (build from source) and Windows none at all; x86 CPUs need AVX-512 (or AVX2, limited);
    and the engine environment here needs Python 3.11 (the pinned CPU torch wheel);
  - a model the CPU build refuses (attention head sizes outside `CPU_HEAD_DIMS`, e.g. 16);
  - tests whose rollouts are scripted and that need an engine only because every step pushes
    weights to one (tests/rl/test_rl_grpo.py's advantage tests: ~2 s each on it, where a vLLM
    start alone costs ~35 s), and the policy server's own test (tests/rl/test_rl_units.py).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
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


# A server for RL: logprobs of the distribution sampled from (after temperature), as TRL
# computes them; no prefix cache to carry KV across a weight reload.
RL_SERVER_ARGS = ["--logprobs-mode", "processed_logprobs", "--no-enable-prefix-caching"]


class DiskSyncEngine:
    """vLLM whose weights are replaced from disk before each step (see above): the server rsr
    starts for the run, or one at engine.base_url started in dev mode on this machine."""

    def __init__(self, cfg: EngineConfig, model_path: str | Path, output_dir: Path,
                 seed: int) -> None:
        from rsr.engine.server import ServeSpec, VllmServer, free_port

        self.weights_dir = output_dir / "engine-weights"
        self.server: VllmServer | None = None
        self.label = "vllm (external)"
        if cfg.base_url is None:
            spec = ServeSpec(checkpoint=Path(model_path), served_name=cfg.served_model_name,
                             port=free_port(), max_model_len=cfg.max_model_len,
                             kv_cache_gib=cfg.kv_cache_gib, dev_mode=True,
                             enforce_eager=cfg.enforce_eager,
                             log=output_dir / "engine.log",
                             extra_args=RL_SERVER_ARGS + ["--seed", str(seed)])
            self.server = VllmServer(spec)
            self.label = self.server.engine.label
            self.url = self.server.base_url
        else:
            self.url = cfg.base_url.rstrip("/")
        self.served_name = cfg.served_model_name
        self.max_tokens: int | None = cfg.max_new_tokens
        self.name = "vllm"
        self.version = 0

    def __enter__(self) -> DiskSyncEngine:
        from rsr.engine.server import check_served

        if self.server is not None:
            self.server.start()
        else:
            check_served(self.url, self.served_name)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()

    @property
    def base_url(self) -> str:
        return self.url

    def push(self, model: Any) -> int:
        from safetensors.torch import save_file

        from rsr.engine.server import dev_post

        weights = {k: v.contiguous() for k, v in policy_state_dict(model).items()}
        self.weights_dir.mkdir(parents=True, exist_ok=True)
        partial = self.weights_dir / "model.safetensors.partial"
        save_file(weights, str(partial), metadata={"format": "pt"})
        os.replace(partial, self.weights_dir / "model.safetensors")  # never read half-written
        if self.server is not None and not self.server.alive():
            raise self.server.failure()
        root = self.url.removesuffix("/v1")
        dev_post(root, "collective_rpc", {"method": "reload_weights",
                                          "kwargs": {"weights_path": str(self.weights_dir)}})
        dev_post(root, "reset_prefix_cache")
        self.version += 1
        return self.version


def make_engine(cfg: EngineConfig, model: Any, tokenizer: Any, seed: int,
                max_completion_length: int, model_path: str | Path | None = None,
                output_dir: Path | None = None) -> CpuEngine | VllmEngine | DiskSyncEngine:
    if cfg.kind == "cpu":
        return CpuEngine(model, tokenizer, cfg, seed)
    if cfg.sync == "disk":
        assert model_path is not None and output_dir is not None
        return DiskSyncEngine(cfg, model_path, output_dir, seed)
    if cfg.base_url is None:
        raise RsrError("engine.weight_sync nccl needs engine.base_url (a `vllm serve` on GPUs)")
    return VllmEngine(cfg, max_completion_length)
