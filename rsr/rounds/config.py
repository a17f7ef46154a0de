"""`rounds.yaml`: R self-improvement rounds over one factory config, typed.

Unknown keys are refused naming the file and the field. Relative paths are resolved against
the config file's folder, as in a factory config (`train.launch` runs in that folder);
`--output-dir` on the command line is the working directory's (rsr/config_paths.py). Loading
also checks what would make the rounds meaningless: an evaluated task in the factory's pool (it would be trained on).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rsr.config_paths import command_line_path, resolve, resolve_model
from rsr.errors import FileFormatError, RsrError
from rsr.factory.config import FactoryConfig
from rsr.factory.config import load_config as load_factory_config
from rsr.yaml_model import load_yaml_model

PolicyRole = Literal["discovery", "planner", "critic", "executor", "auditor"]


class RoundsConfigError(FileFormatError):
    """A rounds config is malformed; names the file and the offending field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrainSettings(_Strict):
    method: Literal["sft", "rl"] = Field(
        "sft", description="sft: `rsr train` on the factory's export; rl: `rsr rl` GRPO "
                           "rewarded by the verifier, from the round's model")
    recipe: Path = Field(description="sft: a training recipe (rsr train); rl: an RL config "
                                     "(rsr rl). Its data/model/output_dir are set per round")
    init: Literal["previous", "base"] = Field(
        "previous", description="previous: start from the last round's checkpoint; base: from "
                                "the recipe's own model every round")
    data: Literal["cumulative", "round"] = Field(
        "cumulative", description="sft: every round's export so far, or this round's only")
    on_empty: Literal["carry", "train"] = Field(
        "carry", description="a round that exports no new rows: carry the model forward "
                             "unchanged (carry), or train on the rows earlier rounds exported "
                             "(train; needs data: cumulative)")
    baselines: list[Literal["direct-sft", "direct-sft-stripped", "terminus2-direct"]] = Field(
        default_factory=list, description="sft: also train on these baseline exports of each "
                                          "round (e.g. terminus2-direct, as the 27B recipes do)")
    launch: str | None = Field(
        None, description="run training as this command instead of in this process, with "
                          "{config} replaced by the round's recipe, e.g. `accelerate launch "
                          "--num_processes 8 -m rsr.training {config}` (multi-GPU); it runs "
                          "in the rounds config's folder, so its relative paths are that "
                          "folder's like every other path of the config")

    @model_validator(mode="after")
    def _coherent(self) -> TrainSettings:
        if self.on_empty == "train" and self.data == "round":
            raise ValueError("on_empty: train needs data: cumulative (a round's own export is "
                             "empty then)")
        if self.launch is not None and "{config}" not in self.launch:
            raise ValueError("launch: the command must contain {config} (the round's recipe)")
        return self


class EvalSettings(_Strict):
    suite: str = Field("core", description="rsr suite of the evaluation tasks (rsr/<suite>)")
    tasks: list[str] = Field(default_factory=list,
                             description="task names of the suite (empty: the whole suite)")
    epochs: int = Field(1, ge=1)
    harness: Literal["terminus2", "statem", "rsrt"] = "terminus2"
    harness_args: dict[str, Any] = Field(default_factory=dict)
    max_samples: int = Field(4, ge=1)
    temperature: float | None = Field(None, description="sampling temperature (None: the "
                                                        "server's default)")


class ServeSettings(_Strict):
    kind: Literal["cpu", "vllm"] = Field(
        "vllm", description="vllm: rsr starts vLLM (the engine environment) on each round's "
                            "checkpoint and stops it after, or uses a server you run at "
                            "base_url; cpu: rsr's policy server in this process, only where no "
                            "vLLM build installs")
    base_url: str | None = Field(None, description="vllm: a server you run (its …/v1 URL); unset: "
                                                   "rsr starts and stops one per checkpoint")
    max_new_tokens: int = Field(96, ge=1, description="longest reply (cpu; vllm started by rsr: the "
                                                      "server's default max_tokens)")
    max_model_len: int = Field(4096, ge=256, description="vllm started by rsr: context window")
    enforce_eager: bool = Field(False, description="vllm started by rsr: skip graph compilation "
                                                   "(faster start-up, slower decoding of large "
                                                   "models)")
    seed: int = 0


class RoundsConfig(_Strict):
    name: str
    output_dir: Path
    rounds: int = Field(2, ge=1, description="R: rounds of discover -> rewrite -> verify -> "
                                             "train -> evaluate")
    factory: Path = Field(description="the factory config every round starts from")
    policy_roles: list[PolicyRole] = Field(
        default_factory=lambda: ["discovery", "executor"],
        description="factory roles played by the latest round's model; the others keep the "
                    "factory config's models")
    first_model: str | None = Field(
        None, description="checkpoint served for round 1's policy roles; None: round 1 uses the "
                          "factory config's models as written (the smoke's scripted ones)")
    train: TrainSettings
    eval: EvalSettings = Field(default_factory=EvalSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)
    source_path: Path | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _roles(self) -> RoundsConfig:
        if not self.policy_roles:
            raise ValueError("policy_roles: name at least one role (discovery, executor, ...)")
        return self

    def digest(self) -> str:
        data = self.model_dump(mode="json")
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def load_rounds_config(path: str | Path, output_dir: str | Path | None = None, *,
                       check_tasks: bool = True) -> RoundsConfig:
    """Read and validate a rounds config and the factory config it names; with check_tasks
    (always, except to validate a config for another machine) also resolve the evaluated tasks
    and refuse any that is in the factory's pool."""
    path = Path(path)
    cfg = load_yaml_model(path, RoundsConfig, what="rounds config", error=RoundsConfigError)
    base = path.resolve().parent
    cfg.output_dir = (command_line_path(output_dir) if output_dir is not None
                      else resolve(cfg.output_dir, base))
    cfg.factory = resolve(cfg.factory, base)
    cfg.train.recipe = resolve(cfg.train.recipe, base)
    if not cfg.train.recipe.is_file():
        raise RoundsConfigError(path, "train.recipe",
                                f"{cfg.train.recipe} not found (relative paths are {base}'s)")
    if cfg.first_model:
        cfg.first_model = resolve_model(cfg.first_model, base)
    cfg.source_path = path.resolve()
    template = factory_template(cfg)
    if check_tasks:
        check_disjoint(cfg, template, eval_task_dirs(cfg))
    return cfg


def factory_template(cfg: RoundsConfig) -> FactoryConfig:
    assert cfg.source_path is not None
    if not cfg.factory.is_file():
        raise RoundsConfigError(cfg.source_path, "factory", f"{cfg.factory} not found")
    try:
        return load_factory_config(cfg.factory)
    except RsrError as e:
        raise RsrError(f"{cfg.source_path}: factory: {e}") from e


def eval_task_dirs(cfg: RoundsConfig) -> dict[str, Path]:
    """The evaluated tasks: name -> task folder."""
    from rsr.suites.registry import resolve_suite_path
    from rsr.tasks.load import load_dataset

    where = cfg.source_path or "rounds config"
    try:
        root = resolve_suite_path(cfg.eval.suite)
    except RsrError as e:
        raise RsrError(f"{where}: eval.suite: {str(e).splitlines()[0]}") from e
    loaded = load_dataset(root, cfg.eval.tasks or None)
    found = {t.name: t.paths.task_dir.resolve() for t in loaded.tasks}
    missing = [t for t in cfg.eval.tasks if t not in found]
    if missing or not found:
        raise RsrError(f"{where}: eval.tasks: {', '.join(missing) or 'nothing'} not found in "
                       f"suite {cfg.eval.suite!r} ({root})")
    return found


def check_disjoint(cfg: RoundsConfig, template: FactoryConfig, evaluated: dict[str, Path]) -> None:
    """An evaluated task in the pool would be rolled out, rewritten and trained on every round:
    refused here, before anything runs (the export's guard would refuse its rows too)."""
    from rsr.factory.discover import load_pool

    pool = load_pool(template)
    dirs = set(evaluated.values())
    clash = sorted(p.task.name for p in pool
                   if p.task.name in evaluated or p.task.paths.task_dir.resolve() in dirs)
    if clash:
        raise RsrError(f"{cfg.source_path}: eval.tasks: {', '.join(clash)} also in the pool of "
                       f"{cfg.factory}; an evaluated task must not be trained on: evaluate other "
                       "tasks or exclude them from the pool (pool.exclude)")
