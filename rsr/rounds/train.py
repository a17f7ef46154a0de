"""A round's training: `rsr train` on the factory's exports, or `rsr rl` from the round's model.

The recipe (or RL config) is the config's own with the round filled in (data, start model,
output folder) and written to `round-N/train.yaml`; a finished run whose run card holds that
file's hash is not run again, so a rerun of the rounds does no new training.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from rsr.errors import RsrError
from rsr.rounds.config import RoundsConfig


@dataclass
class TrainResult:
    model_out: str
    trained: bool
    note: str
    rows: int = 0
    datasets: list[str] = field(default_factory=list)
    metrics: dict[str, float | None] = field(default_factory=dict)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write(data: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _finished(out: Path, recipe_path: Path, key: str) -> dict[str, Any] | None:
    card = out / "run_card.json"
    if not card.is_file() or not (out / "final").is_dir():
        return None
    data = json.loads(card.read_text())
    return data if data.get(key) == _sha(recipe_path) else None


def _launch(cfg: RoundsConfig, path: Path, out: Path, console: Console) -> dict[str, Any]:
    """Train through `train.launch` (e.g. accelerate launch over the GPUs); the run card it
    writes is the result."""
    import shlex
    import subprocess

    assert cfg.train.launch is not None
    command = shlex.split(cfg.train.launch.replace("{config}", shlex.quote(str(path))))
    console.print(f"launching: {shlex.join(command)}")
    # In the config's folder: the command's relative paths follow the rule of the config's own.
    cwd = cfg.source_path.parent if cfg.source_path else None
    done = subprocess.run(command, check=False, cwd=cwd)
    card = out / "run_card.json"
    if done.returncode != 0 or not card.is_file():
        raise RsrError(f"train.launch exited {done.returncode} without a run card in {out}; "
                       "fix the error above and run the same `rsr rounds` command again "
                       "(training resumes from its checkpoints)")
    return json.loads(card.read_text())


def _servable(out: Path, card: dict[str, Any], console: Console) -> str:
    """A LoRA run's adapter merged into its base (what vLLM and the next round load)."""
    if card.get("method") != "lora":
        return str(card.get("final_dir") or out / "final")
    merged = out / "merged"
    if not (merged / "config.json").is_file():
        from rsr.training.merge import merge

        with console.status("merging the LoRA adapter"):
            merge(out, merged)
    return str(merged.resolve())


def row_count(jsonl: Path) -> int:
    if not jsonl.is_file():
        return 0
    return sum(1 for line in jsonl.read_text().splitlines() if line.strip())


def _label(path: Path) -> str:
    """round-N/factory/dataset.jsonl -> round-N; .../baselines/terminus2-direct.jsonl ->
    round-N/terminus2-direct."""
    if path.parent.name == "baselines":
        return f"{path.parents[2].name}/{path.stem}"
    return path.parents[1].name


def sft(cfg: RoundsConfig, n: int, model_in: str | None, exports: list[Path],
        out: Path, console: Console) -> TrainResult:
    """SFT on the rows of `exports` (those that have any); `model_in` is the checkpoint to start
    from (None: the recipe's own model)."""
    from rsr.training.config import load_recipe
    from rsr.training.sft import run

    recipe = load_recipe(cfg.train.recipe)
    data = recipe.model_dump(mode="json")
    with_rows = [p for p in exports if row_count(p) > 0]
    data["data"]["datasets"] = [{"path": str(p), "name": _label(p)} for p in with_rows]
    if cfg.train.init == "previous" and model_in is not None:
        data["model"] = {**data["model"], "path": model_in, "tiny": None}
    data["output_dir"] = str(out)
    data["name"] = f"{recipe.name}-r{n}"
    path = _write(data, out.parent / "train.yaml")
    rows = sum(row_count(p) for p in with_rows)
    done = _finished(out, path, "recipe_sha256")
    note = f"SFT on {rows} row(s)"
    if done is not None:
        note = f"SFT on {rows} row(s) (already trained: run card matches)"
    elif cfg.train.launch:
        done = _launch(cfg, path, out, console)
    else:
        done = run(load_recipe(path), recipe_path=path, console=console).model_dump()
    return TrainResult(_servable(out, done, console), True, note, rows,
                       [str(p) for p in with_rows], _sft_metrics(done))


def _sft_metrics(card: dict[str, Any]) -> dict[str, float | None]:
    return {"train_loss_start": card.get("train_loss_start"),
            "train_loss_end": card.get("train_loss_end"), "steps": card.get("global_steps")}


def rl(cfg: RoundsConfig, n: int, model_in: str | None, evaluated: dict[str, Path], out: Path,
       console: Console) -> TrainResult:
    """GRPO from `model_in` on the RL config's suite, never on an evaluated task."""
    from rsr.rl.config import load_rl_config
    from rsr.rl.grpo import run

    base = load_rl_config(cfg.train.recipe)
    data = base.model_dump(mode="json")
    start = model_in if cfg.train.init == "previous" and model_in else base.model
    data.update(model=start, output_dir=str(out), name=f"{base.name}-r{n}")
    if not cfg.eval.tasks and cfg.eval.suite not in data["eval_suites"]:
        data["eval_suites"].append(cfg.eval.suite)
    clash = sorted(set(base.suite.tasks or []) & set(evaluated))
    if clash or (base.suite.name == cfg.eval.suite and not cfg.eval.tasks):
        raise RsrError(f"{cfg.train.recipe}: suite: trains on evaluated task(s) "
                       f"{', '.join(clash) or base.suite.name}; name other tasks (suite.tasks)")
    if base.suite.name == cfg.eval.suite and not base.suite.tasks:
        # The evaluated tasks of the suite never become rollouts to learn from.
        data["suite"]["exclude"] = sorted({*(base.suite.exclude or []), *evaluated})
    path = _write(data, out.parent / "train.yaml")
    done = _finished(out, path, "config_sha256")
    if done is None and cfg.train.launch:
        done = _launch(cfg, path, out, console)
    elif done is None:
        run(load_rl_config(path), config_path=path, console=console)
        done = json.loads((out / "run_card.json").read_text())
    return TrainResult(_servable(out, done, console), True, f"GRPO, {done['global_steps']} step(s)",
                       metrics={"reward_first": done["reward_first"],
                                "reward_last": done["reward_last"],
                                "steps": done["global_steps"]})


def train_round(cfg: RoundsConfig, n: int, model_in: str | None, exports: list[Path],
                evaluated: dict[str, Path], out: Path, console: Console) -> TrainResult:
    """Train round n on `exports` (each round's dataset.jsonl, in order, with the baselines
    named in train.baselines beside it), or say why the model is carried forward unchanged."""
    if cfg.train.method == "rl":
        return rl(cfg, n, model_in, evaluated, out, console)
    def files(k: int) -> list[Path]:
        return [exports[k]] + [exports[k].parent / "baselines" / f"{b}.jsonl"
                               for b in cfg.train.baselines]

    data = [f for k in range(len(exports)) for f in files(k)] \
        if cfg.train.data == "cumulative" else files(len(exports) - 1)
    available = sum(row_count(p) for p in data)
    round_rows = sum(row_count(p) for p in files(len(exports) - 1))
    if round_rows == 0 and (cfg.train.on_empty == "carry" or available == 0):
        if model_in is None:
            raise RsrError(f"round {n} exported no rows and there is no earlier model to carry "
                           "forward; look at the round's factory report (round-N/factory/report)")
        why = ("no rows from any round" if available == 0
               else "train.on_empty: carry")
        return TrainResult(model_in, False, f"no new rows: model carried forward ({why})")
    return sft(cfg, n, model_in, data, out, console)
