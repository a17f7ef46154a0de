"""RL's weight sync on the real engine: after `DiskSyncEngine.push(model)` the engine computes
with exactly the trainer's weights (its logprobs are the trainer's own, token for token), and
a push of the original weights brings the original model back."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from engine_helpers import Served

PROMPT = "<|im_start|>user\nls -la /app<|im_end|>\n<|im_start|>assistant\n"


def engine_logprobs(served: Served, ids: list[int]) -> list[float]:
    """The engine's logprob of each prompt token after the first (prompt_logprobs)."""
    body = {"model": served.name, "prompt": ids, "max_tokens": 1, "temperature": 0.0,
            "prompt_logprobs": 0}
    req = urllib.request.Request(served.base_url + "/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    reply = json.loads(urllib.request.urlopen(req, timeout=60).read())
    out = []
    for tok, entry in zip(ids[1:], reply["choices"][0]["prompt_logprobs"][1:], strict=True):
        out.append(float(entry[str(tok)]["logprob"]))
    return out


def trainer_logprobs(model: Any, ids: list[int]) -> list[float]:
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, :-1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()


def close(a: list[float], b: list[float], tol: float = 2e-3) -> bool:
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b, strict=True)) < tol


def test_pushed_weights_are_the_ones_the_engine_computes_with(served: Served, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rsr.rl.config import EngineConfig
    from rsr.rl.engine import DiskSyncEngine

    tok = AutoTokenizer.from_pretrained(served.checkpoint)
    ids = tok(PROMPT, add_special_tokens=False)["input_ids"]
    model = AutoModelForCausalLM.from_pretrained(served.checkpoint, dtype=torch.float32)
    before = engine_logprobs(served, ids)
    assert close(before, trainer_logprobs(model, ids))

    cfg = EngineConfig(kind="vllm", base_url=served.base_url, weight_sync="disk",
                       served_model_name=served.name)
    original = {k: v.clone() for k, v in model.state_dict().items()}
    with DiskSyncEngine(cfg, served.checkpoint, tmp_path, seed=0) as engine:
        try:
            torch.manual_seed(1)
            with torch.no_grad():  # a training step's worth of change, and then some
                for p in model.parameters():
                    p.add_(torch.randn_like(p) * 0.05)
            assert engine.push(model) == 1
            after = engine_logprobs(served, ids)
            assert not close(after, before)
            assert close(after, trainer_logprobs(model, ids))
        finally:
            model.load_state_dict(original)
            assert engine.push(model) == 2
    assert close(engine_logprobs(served, ids), before)
