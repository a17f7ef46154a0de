"""Reading a verifier's reward file strictly (one file, finite values in range, no booleans)."""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, Field


class RewardError(ValueError):
    """The reward file is missing, malformed, or contradicts itself."""


class RewardReading(BaseModel):
    reward: float
    milestones: dict[str, float] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    source: str
    warnings: list[str] = Field(default_factory=list)


def _number(value: object, where: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RewardError(f"{where} is not a number: {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        raise RewardError(f"{where} = {value!r} is outside [{low:g}, {high:g}]")
    return float(value)


def read_reward(txt: bytes | None, json_: bytes | None, *, milestones: list[str],
                reward_range: tuple[float, float] = (0.0, 1.0), strict: bool) -> RewardReading:
    """The reward from `reward.txt` / `reward.json` contents (None when the file is absent)."""
    low, high = reward_range
    warnings: list[str] = []
    if txt is not None and json_ is not None:
        if strict:
            raise RewardError("both reward.txt and reward.json were written (one reward file per task)")
        warnings.append("both reward.txt and reward.json were written; reward.txt is used (as Harbor does)")
        json_ = None
    if txt is None and json_ is None:
        raise RewardError("no reward file was written")
    if txt is not None:
        text = txt.decode("utf-8", errors="replace").strip()
        try:
            value = float(text)
        except ValueError as e:
            raise RewardError(f"reward.txt must hold exactly one number, got {text[:80]!r}") from e
        reward = _number(value, "reward.txt", low, high)
        if milestones:
            if strict:
                raise RewardError(f"reward.txt cannot report the milestones declared in task.toml: {milestones}")
            warnings.append("reward.txt carries no milestones")
        return RewardReading(reward=reward, metrics={"reward": reward}, source="reward.txt", warnings=warnings)
    try:
        data = json.loads(json_ or b"")
    except json.JSONDecodeError as e:
        raise RewardError(f"reward.json is not valid JSON: {e}") from e
    if not isinstance(data, dict) or not data:
        raise RewardError("reward.json must be a non-empty object of numeric metrics")
    metrics = {str(k): _number(v, f"reward.json: {k!r}", low, high) for k, v in data.items()}
    names = milestones or [k for k in metrics if k.startswith("milestone_")]
    found = {}
    for name in names:
        if name not in metrics:
            raise RewardError(f"reward.json lacks milestone {name!r} declared in task.toml")
        found[name] = metrics[name]
    if "reward" in metrics:
        reward = metrics["reward"]
    elif len(metrics) == 1:
        reward = next(iter(metrics.values()))
    else:
        reward = min(metrics.values())
    if found and reward >= high - 1e-9 and min(found.values()) < high - 1e-9:
        raise RewardError(f"reward.json reports full reward {reward:g} while milestones failed: "
                          + ", ".join(f"{k}={v:g}" for k, v in found.items() if v < high - 1e-9))
    return RewardReading(reward=reward, milestones=found, metrics=metrics, source="reward.json", warnings=warnings)
