"""Fixtures for the RL tests: a tiny untrained policy built here (nothing is downloaded)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Path]:
    """A tiny untrained policy and its tokenizer, saved."""
    pytest.importorskip("transformers")
    from rsr.training.config import TinyModelConfig
    from rsr.training.render import load_chat_template
    from rsr.training.tiny import build_model, train_tokenizer

    texts = ["ls -la /app\n", '{"analysis": "a", "plan": "p", "commands": []}',
             "Create the directory /app/out. root@abc:/app# mkdir"] * 30
    tok = train_tokenizer(texts, 400, load_chat_template())
    # The shape vLLM's CPU build serves (head_dim 64), and room for terminus2's prompt.
    model = build_model(TinyModelConfig(vocab_size=400), tok, 4096, seed=0)
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return model, tok, path
