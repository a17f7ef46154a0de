"""Helpers of the engine tests (tests/engine/conftest.py holds the session's server)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

SERVED = "tiny"
MAX_MODEL_LEN = 4096


def build_tiny(path: Path, **shape: int) -> Path:
    """An untrained tiny Qwen3 with its tokenizer and chat template, saved as a checkpoint."""
    from rsr.training.config import TinyModelConfig
    from rsr.training.render import load_chat_template
    from rsr.training.tiny import build_model, train_tokenizer

    texts = ["ls -la /app\n", '{"analysis": "a", "plan": "p", "commands": []}',
             "Create the directory /app/out. root@abc:/app# mkdir"] * 30
    tok = train_tokenizer(texts, 400, load_chat_template())
    model = build_model(TinyModelConfig(vocab_size=400, **shape), tok, MAX_MODEL_LEN, seed=0)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@dataclass
class Served:
    base_url: str
    root_url: str
    name: str
    checkpoint: Path
    startup_s: float
    process: subprocess.Popen[str]
    lines: list[str]
