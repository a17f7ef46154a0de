"""Reading a task's reward files, strictly or the way Harbor does.

The hidden tests leave `/logs/verifier/reward.txt` (one number) or `/logs/verifier/reward.json`
(an object of numeric metrics). The files are written in a container that ran the agent's code,
so they are untrusted input: this module turns their bytes into a `RewardReading` or a
`RewardError`, with no Docker and no Inspect involved.

Rules in both modes (Harbor refuses these too):
- a file must be valid UTF-8 and non-empty; reward.txt is exactly one number (`1 FAIL: ...` is
  refused, not read as 1); reward.json is a non-empty object whose values are numbers;
- every value is finite (NaN, Infinity, 1e309 are refused);
- every milestone declared in task.toml is present in reward.json.

Strict mode (`strict=True`) also refuses what Harbor lets through, each of which lets a forged or
broken file count as a pass:
- both files present (which one is the task's is ambiguous; Harbor reads reward.json);
- booleans (`true` is a number to Python, not a score);
- a duplicated key in reward.json (only the last one would be read);
- the total or a milestone outside `reward_range` (a reward of 1e9 inflates a mean);
- reward.txt from a task that declares milestones (the milestones would be lost);
- a total that contradicts its milestones: a total at the top of the range requires every
  milestone at the top, and a total above the bottom requires at least one milestone above it.
Non-strict mode reads such files as Harbor would and records each problem in `warnings`.

The total of reward.json is its `reward` key, else its only metric, else (several metrics and
no total) the minimum, so that a task succeeds only when all its metrics do.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, Field

REWARD_TXT = "reward.txt"
REWARD_JSON = "reward.json"


class RewardError(ValueError):
    """An unusable reward: `kind` is "missing" (no file at all) or "malformed" (anything else)."""

    def __init__(self, message: str, kind: Literal["missing", "malformed"] = "malformed") -> None:
        super().__init__(message)
        self.kind = kind


class RewardReading(BaseModel):
    reward: float
    milestones: dict[str, float] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    source: Literal["reward.txt", "reward.json"]
    warnings: list[str] = Field(default_factory=list)


def read_reward(txt: bytes | None, json_: bytes | None, *, milestones: list[str],
                reward_range: tuple[float, float] = (0.0, 1.0), strict: bool) -> RewardReading:
    """The reward in reward.txt / reward.json content (None: the file does not exist)."""
    lo, hi = reward_range
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"reward_range must be two finite numbers, low < high; got {reward_range!r}")
    warnings: list[str] = []
    if txt is None and json_ is None:
        raise RewardError(f"no reward file: the tests wrote neither {REWARD_TXT} nor {REWARD_JSON}", "missing")
    if txt is not None and json_ is not None:
        problem = f"both {REWARD_TXT} and {REWARD_JSON} exist; a task writes one of them"
        if strict:
            raise RewardError(problem)
        warnings.append(f"{problem} ({REWARD_JSON} was read, as Harbor does)")

    if json_ is not None:
        metrics = _json_metrics(json_, strict, warnings)
        reading = RewardReading(reward=total_reward(metrics), metrics=metrics, source=REWARD_JSON, warnings=warnings)
        missing = [m for m in milestones if m not in metrics]
        if missing:
            raise RewardError(f"{REWARD_JSON} lacks the milestone(s) {', '.join(missing)} declared in task.toml")
        reading.milestones = {m: metrics[m] for m in milestones}
    else:
        assert txt is not None
        reward = _txt_reward(txt)
        reading = RewardReading(reward=reward, metrics={"reward": reward}, source=REWARD_TXT, warnings=warnings)
        if milestones:
            problem = (f"{REWARD_TXT} carries no milestones but task.toml declares "
                       f"{', '.join(milestones)}; write {REWARD_JSON}")
            if strict:
                raise RewardError(problem)
            warnings.append(problem)

    for problem in _range_problems(reading, lo, hi) + _contradictions(reading, lo, hi):
        if strict:
            raise RewardError(problem)
        warnings.append(problem)
    reading.warnings = warnings  # the model was built with a copy of the list
    return reading


def _decode(raw: bytes, name: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RewardError(f"{name} is not UTF-8 text: {e}") from e
    if not text.strip():
        raise RewardError(f"{name} is empty")
    return text


def _txt_reward(raw: bytes) -> float:
    text = _decode(raw, REWARD_TXT).strip()
    try:
        value = float(text)
    except ValueError as e:
        raise RewardError(f"{REWARD_TXT} must hold exactly one number, found {text[:80]!r}") from e
    if not math.isfinite(value):
        raise RewardError(f"{REWARD_TXT} holds a non-finite number: {text[:80]!r}")
    return value


def _json_metrics(raw: bytes, strict: bool, warnings: list[str]) -> dict[str, float]:
    text = _decode(raw, REWARD_JSON)
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except (json.JSONDecodeError, RecursionError) as e:
        raise RewardError(f"{REWARD_JSON} is not valid JSON: {e}") from e
    if not isinstance(data, dict) or not data:
        raise RewardError(f"{REWARD_JSON} must be a non-empty object of numeric metrics, "
                          f"found {type(data).__name__}: {text.strip()[:80]!r}")
    if duplicates:
        problem = f"{REWARD_JSON} repeats the key(s) {', '.join(sorted(set(duplicates)))}"
        if strict:
            raise RewardError(problem)
        warnings.append(problem + " (the last value was read)")
    metrics: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            problem = f"{REWARD_JSON}: {key!r} is a boolean ({json.dumps(value)}), not a number"
            if strict:
                raise RewardError(problem)
            warnings.append(problem)
        elif not isinstance(value, int | float):
            raise RewardError(f"{REWARD_JSON}: {key!r} is not a number: {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise RewardError(f"{REWARD_JSON}: {key!r} is not a finite number: {value!r}")
        metrics[key] = number
    return metrics


def total_reward(metrics: dict[str, float]) -> float:
    if "reward" in metrics:
        return metrics["reward"]
    if len(metrics) == 1:
        return next(iter(metrics.values()))
    return min(metrics.values())


def _range_problems(reading: RewardReading, lo: float, hi: float) -> list[str]:
    scored = {"reward": reading.reward, **reading.milestones}
    return [f"{reading.source}: {name} = {value:g} is outside the task's reward range [{lo:g}, {hi:g}]"
            for name, value in scored.items() if not lo <= value <= hi]


def _contradictions(reading: RewardReading, lo: float, hi: float) -> list[str]:
    if not reading.milestones:
        return []
    short = sorted(name for name, value in reading.milestones.items() if value < hi)
    if reading.reward >= hi and short:
        return [f"{reading.source}: reward {reading.reward:g} claims full success but milestone(s) "
                f"{', '.join(short)} did not pass"]
    if reading.reward > lo and all(value <= lo for value in reading.milestones.values()):
        return [f"{reading.source}: reward {reading.reward:g} with every milestone at {lo:g}"]
    return []
