"""Helpers shared by the training tests (a uniquely named module, not conftest, so test
modules can import it without clashing with other directories' conftest.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).parent / "fixtures"
TRAJECTORIES = FIXTURES / "trajectories.jsonl"
sys.path.insert(0, str(FIXTURES))

from make_trajectories import make_rows  # noqa: E402

__all__ = ["FIXTURES", "TRAJECTORIES", "make_rows", "recipe_dict", "write_jsonl",
           "write_recipe"]


def recipe_dict(output_dir: Path, datasets: list[Path], **overrides: Any) -> dict[str, Any]:
    """A tiny-CPU recipe; `overrides` of `data`/`train` update those sections key by key,
    any other override replaces its section."""
    recipe: dict[str, Any] = {
        "name": "test-tiny",
        "model": {"tiny": {"vocab_size": 1024, "hidden_size": 64, "num_layers": 2,
                           "num_heads": 4, "num_kv_heads": 2, "head_dim": 16,
                           "intermediate_size": 128}},
        "method": "full",
        "data": {"datasets": [{"path": str(p)} for p in datasets], "max_length": 1024,
                 "mask_check_rows": None, "loss_probe_rows": 16},
        "train": {"learning_rate": 1e-3, "lr_scheduler": "constant", "warmup_ratio": 0.0,
                  "epochs": 8, "per_device_batch_size": 4, "precision": "fp32",
                  "activation_checkpointing": False, "seed": 0, "logging_steps": 5,
                  "save_steps": 1000, "use_cpu": True},
        "output_dir": str(output_dir),
    }
    for key, value in overrides.items():
        if key in ("data", "train"):
            recipe[key] = {**recipe[key], **value}
        else:
            recipe[key] = value
    return recipe


def write_recipe(path: Path, recipe: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(recipe))
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
