"""Serving a trained checkpoint with vLLM, and the commands that evaluate it.

`plan_serving(CKPT)` reads the checkpoint (and the run card next to it) and decides what must
match training: the chat template saved with the weights, the context length trained at, the
end-of-turn token; and what must fit the GPUs: the tensor-parallel size from the exact
parameter count (read from the safetensors headers, no weights are loaded). The plan renders
the `vllm serve` command line and the `inspect eval` / `rsr eval table5` / factory settings
that talk to that server. Nothing here imports vLLM or torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
import struct
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rsr.errors import RsrError
from rsr.training.render import MODEL_TEMPLATE, load_chat_template
from rsr.training.runcard import RUN_CARD

# Share of each GPU's memory the weights may take; the rest is KV cache for many concurrent
# long agent contexts (a 32k-token context of a 27B GQA model is ~2 GB in bf16).
WEIGHT_SHARE = 0.5
TP_SIZES = (1, 2, 4, 8)
SERVE_DTYPE_BYTES = 2  # bf16
DEFAULT_TEMPERATURE = 0.7  # the executor's temperature that produced the training data


class ServePlan(BaseModel):
    """Everything needed to serve one checkpoint and point evaluations at it."""

    model_config = ConfigDict(extra="forbid")

    checkpoint: Path
    run_card: Path | None
    served_model_name: str
    host: str = "127.0.0.1"
    port: int = 8000
    parameters: int = Field(description="Exact count from the safetensors headers.")
    tensor_parallel_size: int
    data_parallel_size: int = Field(1, description="Replicas on the remaining GPUs.")
    max_model_len: int = Field(description="The context length the model was trained at.")
    chat_template: Path
    eos_token: str | None
    max_num_seqs: int = Field(description="Concurrent sequences per replica.")
    gpu_memory_utilization: float = 0.9
    temperature: float = DEFAULT_TEMPERATURE
    top_p: float | None = None
    kv_tokens_per_replica: int | None = Field(
        None, description="Estimate: KV-cache tokens one replica holds (full-attention layers, "
                          "bf16), from the GPU memory left after the weights.")
    notes: list[str] = Field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def inspect_model(self) -> str:
        return f"vllm/{self.served_model_name}"

    def vllm_command(self) -> list[str]:
        cmd = ["vllm", "serve", str(self.checkpoint),
               "--served-model-name", self.served_model_name,
               "--host", self.host, "--port", str(self.port),
               "--dtype", "bfloat16",
               "--tensor-parallel-size", str(self.tensor_parallel_size),
               "--max-model-len", str(self.max_model_len),
               "--chat-template", str(self.chat_template),
               "--max-num-seqs", str(self.max_num_seqs),
               "--gpu-memory-utilization", str(self.gpu_memory_utilization),
               # Agent turns resend a growing prefix: caching it is most of the throughput.
               "--enable-prefix-caching",
               # Server-side sampling defaults = the training-time ones, so a client that sets
               # none (an eval set, a factory role) still samples as the data was produced.
               "--generation-config", "auto",
               "--override-generation-config", json.dumps(self.sampling())]
        if self.data_parallel_size > 1:
            cmd += ["--data-parallel-size", str(self.data_parallel_size)]
        return cmd

    def sampling(self) -> dict[str, float]:
        out = {"temperature": self.temperature}
        if self.top_p is not None:
            out["top_p"] = self.top_p
        return out

    def sampling_args(self) -> list[str]:
        args = ["--temperature", str(self.temperature)]
        if self.top_p is not None:
            args += ["--top-p", str(self.top_p)]
        return args

    def env(self) -> dict[str, str]:
        # Inspect's vllm provider uses a running server named by VLLM_BASE_URL instead of
        # starting one, and asks it for max_model_len (Terminus 2's context window).
        return {"VLLM_BASE_URL": self.base_url}

    def inspect_command(self, suite: str = "core", sandbox: str = "docker",
                        max_connections: int | None = None) -> list[str]:
        cmd = ["inspect", "eval", f"rsr/{suite}", "--model", self.inspect_model,
               "--model-base-url", self.base_url, *self.sampling_args()]
        if sandbox != "docker":
            cmd += ["-T", f"sandbox={sandbox}"]
        cmd += ["--max-connections", str(max_connections or self.concurrency())]
        return cmd

    def table5_command(self, log_dir: str, label: str, sandbox: str = "docker") -> list[str]:
        cmd = ["rsr", "eval", "table5", "--model", self.inspect_model, "--label", label,
               "--log-dir", log_dir]
        if sandbox != "docker":
            cmd += ["-T", f"sandbox={sandbox}"]
        return cmd

    def concurrency(self) -> int:
        """Requests in flight that keep every replica's batch full."""
        return self.max_num_seqs * self.data_parallel_size

    def factory_models(self) -> dict[str, Any]:
        """The `models:` section of a factory.yaml whose roles all use this server."""
        return {"model": self.inspect_model, "model_args": {"base_url": self.base_url}}

    def render(self, log_dir: str = "logs/table5", label: str | None = None,
               sandbox: str = "docker") -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env().items())
        label = label or self.served_model_name
        lines = [
            f"# checkpoint {self.checkpoint} ({self.parameters / 1e9:.3g}B parameters)",
            "# 1. serve it (on the GPU machine; keep it running):",
            shlex.join(self.vllm_command()),
            "# 2. wait until it answers:",
            f"curl -s {self.base_url}/models",
            "# 3. evaluate the core suite against it:",
            shlex.join(self.inspect_command("core", sandbox)),
            "# 4. the paper's Table 5 (every suite x 3 epochs; rerun to resume):",
            f"{env} {shlex.join(self.table5_command(log_dir, label, sandbox))}",
            "# 5. a factory run on it (factory.yaml):",
            "#   models: " + json.dumps(self.factory_models()),
            f"#   concurrency: {{max_samples: {self.concurrency()}}}",
            f"#   execute: {{temperature: {self.temperature}}}",
            f"# must match training: chat template {self.chat_template}, max_model_len "
            f"{self.max_model_len}, end of turn {self.eos_token!r}, temperature {self.temperature}"
            + (f", top_p {self.top_p}" if self.top_p is not None else ""),
        ]
        if self.kv_tokens_per_replica is not None:
            contexts = self.kv_tokens_per_replica // max(1, self.max_model_len // 2)
            lines.append(f"# sizing: ~{self.kv_tokens_per_replica:,} KV-cache tokens per replica "
                         f"(estimate) = ~{contexts} concurrent half-full contexts per replica")
        lines += [f"# note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


# -- reading the checkpoint ---------------------------------------------------------------

def _safetensors_parameters(path: Path) -> int:
    """Element count of one safetensors file, from its JSON header alone."""
    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    return sum(math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__")


def count_parameters(checkpoint: Path) -> int:
    files = sorted(checkpoint.glob("*.safetensors"))
    if not files:
        raise RsrError(f"{checkpoint}: no *.safetensors weights (vLLM serves safetensors checkpoints)")
    return sum(_safetensors_parameters(f) for f in files)


def choose_tensor_parallel(parameters: int, attention_heads: int, gpus: int,
                           gpu_memory_gb: float) -> int:
    """The smallest tensor-parallel size whose weight shard leaves half of each GPU for the KV
    cache; it must divide the attention heads (vLLM splits heads across GPUs)."""
    weights_gb = parameters * SERVE_DTYPE_BYTES / 1e9
    for tp in TP_SIZES:
        if tp > gpus:
            break
        if attention_heads % tp == 0 and weights_gb / tp <= WEIGHT_SHARE * gpu_memory_gb:
            return tp
    raise RsrError(f"{weights_gb:.0f} GB of bf16 weights do not fit {gpus} GPU(s) of "
                   f"{gpu_memory_gb:g} GB with room for the KV cache; use more or larger GPUs")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise RsrError(f"{path}: cannot read: {e}") from e


def _resolve(path: Path) -> tuple[Path, Path | None]:
    """(weights dir, run card) for a run dir, its final/, or a merged checkpoint."""
    if (path / RUN_CARD).is_file() and (path / "final").is_dir():
        return path / "final", path / RUN_CARD
    card = path.parent / RUN_CARD
    return path, card if card.is_file() else None


def plan_serving(path: str | Path, *, gpus: int = 8, gpu_memory_gb: float = 80.0,
                 port: int = 8000, host: str = "127.0.0.1", name: str | None = None,
                 tensor_parallel_size: int | None = None, max_num_seqs: int = 64,
                 temperature: float = DEFAULT_TEMPERATURE) -> ServePlan:
    checkpoint, card_path = _resolve(Path(path).expanduser().resolve())
    if (checkpoint / "adapter_config.json").is_file() and not (checkpoint / "config.json").is_file():
        run = checkpoint.parent
        raise RsrError(f"{checkpoint} is a LoRA adapter: merge it into full weights first: "
                       f"`rsr train merge {run} --out {run}-merged`, then serve {run}-merged")
    if not (checkpoint / "config.json").is_file():
        raise RsrError(f"{checkpoint}: no config.json; expected a `rsr train` run directory, its "
                       "final/ or a merged checkpoint")
    config = _read_json(checkpoint / "config.json")
    config = config.get("text_config", config)  # multimodal wrappers keep the LM's config inside
    card = _read_json(card_path) if card_path else None
    notes: list[str] = []

    template_file = checkpoint / "chat_template.jinja"
    if not template_file.is_file():
        raise RsrError(f"{checkpoint}: no chat_template.jinja; serving without the training "
                       "template would render prompts the model was never trained on")
    if card is not None:
        served = template_file.read_text(encoding="utf-8")
        if card.get("chat_template_sha256"):
            # The card pins the exact text trained with (also when it was the tokenizer's own).
            same = hashlib.sha256(served.encode()).hexdigest() == card["chat_template_sha256"] or \
                hashlib.sha256(served.strip().encode()).hexdigest() == card["chat_template_sha256"]
        elif card["chat_template"] == MODEL_TEMPLATE:
            same = True  # an older card: the checkpoint's template is the tokenizer's own
        else:
            same = served.strip() == load_chat_template(card["chat_template"]).strip()
        if not same:
            raise RsrError(f"{template_file} differs from the training template "
                           f"{card['chat_template']!r} named in {card_path}")
    else:
        notes.append("no run card beside the checkpoint: the chat template and context length "
                     "are the checkpoint's own, not checked against a training run")

    positions = int(config.get("max_position_embeddings") or 0)
    trained = int(card["max_length"]) if card else positions
    if not trained:
        raise RsrError(f"{checkpoint}: neither a run card nor config.json says the context length")
    max_model_len = min(trained, positions) if positions else trained

    eos = card["recipe"].get("eos_token") if card else None
    tokenizer_cfg = checkpoint / "tokenizer_config.json"
    if tokenizer_cfg.is_file():
        saved_eos = _read_json(tokenizer_cfg).get("eos_token")
        saved_eos = saved_eos.get("content") if isinstance(saved_eos, dict) else saved_eos
        if eos and saved_eos and saved_eos != eos:
            raise RsrError(f"{tokenizer_cfg}: eos_token {saved_eos!r} is not the training "
                           f"end-of-turn {eos!r}: generations would not stop where training ended turns")
        eos = eos or saved_eos

    generation = checkpoint / "generation_config.json"
    top_p = _read_json(generation).get("top_p") if generation.is_file() else None

    parameters = count_parameters(checkpoint)
    heads = int(config.get("num_attention_heads") or 1)
    tp = tensor_parallel_size or choose_tensor_parallel(parameters, heads, gpus, gpu_memory_gb)
    if heads % tp:
        raise RsrError(f"--tensor-parallel-size {tp} does not divide the {heads} attention heads")
    if tp > gpus:
        raise RsrError(f"--tensor-parallel-size {tp} needs more than the {gpus} GPU(s) given")
    kv_tokens = _kv_tokens(config, parameters, tp, gpu_memory_gb)
    served = name or re.sub(r"[^A-Za-z0-9_.-]+", "-",
                            (card or {}).get("name") or checkpoint.name).strip("-")
    return ServePlan(checkpoint=checkpoint, run_card=card_path, served_model_name=served, host=host,
                     port=port, parameters=parameters, tensor_parallel_size=tp,
                     data_parallel_size=max(1, gpus // tp), max_model_len=max_model_len,
                     chat_template=template_file, eos_token=eos, max_num_seqs=max_num_seqs,
                     temperature=temperature, top_p=float(top_p) if top_p is not None else None,
                     kv_tokens_per_replica=kv_tokens, notes=notes)


def _kv_tokens(config: dict[str, Any], parameters: int, tp: int, gpu_memory_gb: float,
               utilization: float = 0.9) -> int | None:
    layers, heads = config.get("num_hidden_layers"), config.get("num_attention_heads")
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or (config.get("hidden_size", 0) // heads if heads else 0)
    if not (layers and kv_heads and head_dim):
        return None
    per_token = 2 * int(layers) * int(kv_heads) * int(head_dim) * SERVE_DTYPE_BYTES  # K and V
    free = tp * gpu_memory_gb * 1e9 * utilization - parameters * SERVE_DTYPE_BYTES
    return max(0, int(free // per_token))
