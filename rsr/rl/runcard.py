"""The RL run card (`<output_dir>/run_card.json`) and the per-step rollout ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

RL_RUN_CARD = "run_card.json"
STEPS_LOG = "steps.jsonl"


class StepRecord(BaseModel):
    """One GRPO generation: its rollouts' rewards and what the integrity rule withheld."""

    model_config = ConfigDict(extra="forbid")

    step: int
    rollouts: int
    reward_mean: float
    """Mean of the rewards training saw before any shuffling (the verifier's, after the
    integrity rule): the learning curve, also for the shuffled control."""
    raw_reward_mean: float
    integrity_withheld: int
    """Samples whose positive reward the integrity rule set to 0."""
    integrity_not_clean: int
    errors: int
    rewards: list[float]
    tasks: list[str]
    weights_version: int
    calls: int
    calls_dropped: int
    token_sources: dict[str, int]
    wall_s: float


class RLRunCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    name: str
    method: str
    config_path: str | None
    config_sha256: str | None
    config: dict[str, Any]
    git_commit: str | None
    git_dirty: bool | None
    base_model: str
    final_dir: str
    created_at: str
    runtime_s: float
    versions: dict[str, str]
    engine: str
    shuffle_rewards: bool
    global_steps: int
    rollouts: int
    reward_first: float
    reward_last: float
    """Mean reward of the first and the last GRPO step."""
    integrity_withheld: int
    integrity_not_clean: int
    errors: int
    steps: list[StepRecord]
    resumed_from: str | None = None
    device: str
    benchmark: dict[str, Any] | None = None
    """benchmarks/rl_tiny.py's figures (this run and its shuffled control), when it made it."""


def read_steps(path: Path) -> list[StepRecord]:
    if not path.is_file():
        return []
    return [StepRecord.model_validate(json.loads(line))
            for line in path.read_text().splitlines() if line.strip()]


def append_step(path: Path, record: StepRecord) -> None:
    with path.open("a") as f:
        f.write(record.model_dump_json() + "\n")
