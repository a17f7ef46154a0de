"""The run card (`<output_dir>/run_card.json`) and the loss-curve plot."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

RUN_CARD = "run_card.json"
LOSS_PNG = "loss_curve.png"


class DatasetCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    path: str
    sha256: str
    weight: float
    rows_read: int
    trailing_messages_stripped: int
    rows_kept: int
    rows_dropped_too_long: int
    rows_split: int
    steps_kept: int
    steps_dropped_too_long: int
    rows_used: int


class RunCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    name: str
    method: str
    recipe_path: str | None
    recipe_sha256: str | None
    recipe: dict[str, Any]
    git_commit: str | None
    git_dirty: bool | None
    base_model: str
    chat_template: str
    chat_template_sha256: str | None = None
    reasoning_rows: int = 0
    final_dir: str
    created_at: str
    runtime_s: float
    versions: dict[str, str]
    datasets: list[DatasetCard]
    long_trajectory_policy: str
    max_length: int
    rows: int
    rows_dropped_too_long: int
    steps_dropped_too_long: int
    rows_split: int
    skipped_too_long: list[dict[str, Any]] = []
    """Every row (or hand-off piece) skipped for not fitting max_length, with its provenance."""
    tokens: int
    assistant_tokens: int
    mask_rows_checked: int
    mask_assistant_tokens_checked: int
    loss_probe_rows: int
    train_loss_start: float
    train_loss_end: float
    validation_tasks: list[str] = []
    """Tasks held out from training (by task, never by row)."""
    validation_rows: int = 0
    validation_loss_start: float | None = None
    validation_loss_end: float | None = None
    logged_loss: list[tuple[int, float]]
    global_steps: int
    epochs: float
    resumed_from: str | None = None
    world_size: int = 1
    device: str


def git_state(cwd: Path | None = None) -> tuple[str | None, bool | None]:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                    cwd=cwd, capture_output=True, text=True,
                                    check=True).stdout.strip())
        return commit, dirty
    except (OSError, subprocess.CalledProcessError):
        return None, None


def plot_loss(card: RunCard, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    if card.logged_loss:
        steps, losses = zip(*card.logged_loss, strict=True)
        ax.plot(steps, losses, marker=".", label="train loss (logged)")
    ax.scatter([0, card.global_steps], [card.train_loss_start, card.train_loss_end], color="red",
               zorder=3, label=f"probe loss ({card.loss_probe_rows} rows)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss (assistant tokens)")
    ax.set_title(f"{card.name} ({card.method}, {card.rows} rows)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
