"""Serving a round's checkpoint to the factory roles and the evaluation that use it.

cpu: rsr's policy server (rsr.rl.policy_server) in this process, at a 127.0.0.1 port, reached
through the `rsr-vllm/<name>` provider like a vLLM server. vllm: you serve the checkpoint
(`rsr serve CKPT` prints the command); the round checks that `base_url` lists the model under
its served name before anything is rolled out, and otherwise stops with the command to run.
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rsr.errors import RsrError
from rsr.rounds.config import ServeSettings


@dataclass(frozen=True)
class Served:
    checkpoint: str
    served_name: str
    base_url: str
    weights_sha256: str | None = None
    """cpu: a hash of the checkpoint's weight files as loaded, so a ledger row proves which
    weights produced the rollouts."""

    @property
    def model(self) -> str:
        return f"rsr-vllm/{self.served_name}"

    @property
    def model_args(self) -> dict[str, str]:
        return {"base_url": self.base_url}


def served_names(base_url: str) -> list[str]:
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=10) as r:
            return [m["id"] for m in json.loads(r.read()).get("data", [])]
    except (urllib.error.URLError, OSError, ValueError):
        return []


def vllm_instructions(checkpoint: str, served_name: str, base_url: str) -> str:
    return (f"serve {checkpoint} as {served_name!r} at {base_url}, e.g.\n"
            f"  rsr serve {checkpoint} --name {served_name} --exec\n"
            "(the plan `rsr serve` prints matches the chat template and context length of "
            "training), then run the same `rsr rounds` command again")


def weights_digest(checkpoint: str | Path) -> str | None:
    files = sorted(Path(checkpoint).glob("*.safetensors"))
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


def _load(checkpoint: str) -> tuple[object, object]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(checkpoint)
    if not (path / "config.json").is_file():
        raise RsrError(f"{checkpoint}: not a checkpoint folder (no config.json); serve.kind cpu "
                       "serves local checkpoints")
    return (AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32),
            AutoTokenizer.from_pretrained(path))


@contextmanager
def serve(checkpoint: str, served_name: str, settings: ServeSettings) -> Iterator[Served]:
    """The checkpoint, answering at an OpenAI-compatible URL for as long as the block runs."""
    if settings.kind == "vllm":
        assert settings.base_url is not None
        names = served_names(settings.base_url)
        if served_name not in names:
            seen = f"it serves {', '.join(names)}" if names else "nothing answers there"
            raise RsrError(f"serve.base_url {settings.base_url}: {seen}; "
                           + vllm_instructions(checkpoint, served_name, settings.base_url))
        yield Served(checkpoint, served_name, settings.base_url)
        return
    from rsr.rl.policy_server import PolicyServer

    model, tokenizer = _load(checkpoint)
    with PolicyServer(model, tokenizer, served_name=served_name,
                      max_new_tokens=settings.max_new_tokens, seed=settings.seed) as server:
        yield Served(checkpoint, served_name, server.base_url, weights_digest(checkpoint))
