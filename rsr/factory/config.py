"""`factory.yaml`: the typed configuration of one RSR data-factory run.

Unknown keys are errors (a typo must not silently fall back to a default), and every error
names the file and the field. Relative paths are the config file's folder's; `--output-dir`
on the command line is the working directory's (rsr/config_paths.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rsr.config_paths import command_line_path, resolve
from rsr.errors import RsrError
from rsr.yaml_model import read_yaml_mapping

HarnessName = Literal["terminus2", "statem", "rsrt"]
Role = Literal["planner", "critic", "executor", "auditor"]
ROLES: tuple[Role, ...] = ("planner", "critic", "executor", "auditor")
STAGES = ("discover", "compress", "plan", "execute", "filter", "export")
Stage = Literal["discover", "compress", "plan", "execute", "filter", "export"]

DEFAULT_EVAL_SUITES = ["tb2", "tb2_1", "tb3", "tb4", "tbh", "swr100", "lhtb"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PoolConfig(_Strict):
    suites: list[str] = Field(default_factory=list, description="Suite names (rsr.suites.registry).")
    paths: list[Path] = Field(default_factory=list, description="Task or dataset directories.")
    tasks: list[str] = Field(default_factory=list, description="Glob patterns to include.")
    exclude: list[str] = Field(default_factory=list, description="Glob patterns to exclude.")

    @model_validator(mode="after")
    def _some_source(self) -> PoolConfig:
        if not self.suites and not self.paths:
            raise ValueError("name at least one suite or path")
        return self


class HarnessSpec(_Strict):
    name: HarnessName
    args: dict[str, Any] = Field(default_factory=dict,
                                 description="Keyword arguments of the harness agent.")


class DiscoveryConfig(_Strict):
    harnesses: list[HarnessSpec] = Field(
        default_factory=lambda: [HarnessSpec(name="terminus2"), HarnessSpec(name="statem"),
                                 HarnessSpec(name="rsrt")])
    epochs: int = Field(1, ge=1, description="Rollouts per task and harness.")
    produced_files_limit: int = Field(
        40, ge=0, description="Files written during a success that are kept for leak checks.")


class ModelsConfig(_Strict):
    model: str = Field(description="The base model (discovery, and every role by default).")
    model_args: dict[str, Any] = Field(default_factory=dict)
    roles: dict[Role, str] = Field(
        default_factory=dict, description="Per-role model overrides (planner, critic, executor, "
                                          "auditor); absent roles use the base model.")
    served: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Model args per model name, used instead of "
                                          "model_args for that model (e.g. the base_url of a "
                                          "checkpoint served for some roles only).")

    def for_role(self, role: Role) -> str:
        return self.roles.get(role, self.model)

    def args_for(self, name: str) -> dict[str, Any]:
        return self.served.get(name, self.model_args)


class PlanConfig(_Strict):
    k: int = Field(4, ge=1, description="Candidate runbooks per source trajectory.")
    critic_rounds: int = Field(3, ge=1, description="N: planner/critic rounds per candidate.")
    temperature: float | None = Field(1.0, description="Planner sampling temperature.")
    model_review: bool = Field(True, description="Run the model critic after the "
                                                 "deterministic checks.")


class AdaptiveConfig(_Strict):
    """Opt-in early stopping; the paper's full K x M schedule is the default. Both rules count
    *kept* trajectories (after the verifier, the leak scans, the auditor and dedupe), which
    is what the data is made of, not verifier passes."""

    enabled: bool = Field(False, description="Stop early by the rules below (default: run "
                                             "every accepted runbook M times).")
    stop_runbook_after_failures: int | None = Field(
        2, ge=1, description="Stop a runbook after this many consecutive executions that were "
                             "not kept.")
    stop_source_after_kept: int | None = Field(
        None, ge=1, description="Stop every runbook of a source once it has this many kept "
                                "trajectories.")


class ExecuteConfig(_Strict):
    m: int = Field(4, ge=1, description="Executions per accepted runbook.")
    temperature: float = Field(0.7, description="Executor sampling temperature.")
    max_episodes: int = Field(200, ge=1)
    wait_mode: Literal["fixed", "adaptive"] = "fixed"
    agent_timeout_sec: float | None = Field(None, gt=0)
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig)


class FilterConfig(_Strict):
    auditor: bool = Field(True, description="Drop trajectories with values the auditor marks "
                                            "as not derivable from the task or environment.")
    dedupe: bool = Field(True, description="Drop exact duplicates, duplicates after normalising "
                                           "sandbox noise, and near-duplicates.")
    near_duplicate_threshold: float | None = Field(
        0.9, gt=0, le=1, description="MinHash Jaccard over 5-word shingles of the normalised "
                                     "trajectory at which a trajectory is a near-duplicate of "
                                     "one kept before it; null: exact and normalised only.")
    min_leak_chars: int = Field(24, ge=8, description="Shortest runbook line that counts as "
                                                      "runbook text leaking into messages.")


class ExportConfig(_Strict):
    eval_suites: list[str] = Field(default_factory=lambda: list(DEFAULT_EVAL_SUITES),
                                   description="Suites whose tasks must not be trained on.")
    eval_paths: list[Path] = Field(default_factory=list,
                                   description="Further evaluation task folders to guard.")
    allow_contamination: bool = Field(False, description="Export refused rows anyway "
                                                         "(marked in a column).")
    instruction_overlap: float = Field(
        0.5, gt=0, le=1, description="Share of an instruction's 8-word shingles found in an "
                                     "evaluation instruction that counts as overlap.")
    instruction_similarity: float = Field(
        0.25, gt=0, le=1, description="MinHash Jaccard of word pairs between an instruction and "
                                     "an evaluation instruction that counts as a paraphrase.")
    baselines: bool = Field(True, description="Also export Direct SFT (as run, and control-"
                                              "stripped) and the Terminus 2 successes.")


class ConcurrencyConfig(_Strict):
    max_samples: int = Field(4, ge=1)
    max_sandboxes: int | None = Field(None, ge=1)
    retry_on_error: int = Field(0, ge=0)


class BudgetConfig(_Strict):
    max_rollouts: int | None = Field(None, ge=0, description="Sandboxed rollouts over all "
                                                             "stages (discovery + execution).")
    max_tokens: int | None = Field(None, ge=0, description="Model tokens over all stages.")
    max_sandbox_minutes: float | None = Field(None, ge=0)


class FactoryConfig(_Strict):
    name: str = "rsr-factory"
    output_dir: Path
    seed: int = 0
    pool: PoolConfig
    discovery: DiscoveryConfig = Field(default_factory=DiscoveryConfig)
    models: ModelsConfig
    plan: PlanConfig = Field(default_factory=PlanConfig)
    execute: ExecuteConfig = Field(default_factory=ExecuteConfig)
    filter: FilterConfig = Field(default_factory=FilterConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)
    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)
    budgets: BudgetConfig = Field(default_factory=BudgetConfig)
    sandbox: Literal["docker", "k8s"] = Field(
        "docker", description="Where rollouts run: docker (this machine) or k8s (a cluster, "
                              "images from `rsr images build --push`; docs/cluster.md).")
    integrity: Literal["strict", "auto", "warn"] = Field(
        "strict", description="The verifier's integrity mode for every rollout: strict (default) admits a "
                              "trajectory only when the audit, the reward file and test.sh's exit code "
                              "all agree (README: Verifier).")
    display: Literal["factory", "inspect"] = Field(
        "factory", description="factory: one progress bar over the stages; inspect: Inspect's "
                               "own per-sample task display for every stage eval.")
    source_path: Path | None = Field(None, exclude=True)

    def digest(self) -> str:
        # Where sandboxes run or a model is served does not change what a run means: a run may
        # resume on a cluster, or against the same checkpoint served at another port.
        data = self.model_dump(mode="json", exclude={"source_path", "display", "sandbox"})
        data["models"].pop("served", None)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def load_config(path: str | Path, output_dir: str | Path | None = None) -> FactoryConfig:
    """Read and validate a factory config; errors name the file and the field."""
    path = Path(path)
    raw = read_yaml_mapping(path, "factory config")
    if output_dir is not None:
        raw["output_dir"] = str(command_line_path(output_dir))
    try:
        cfg = FactoryConfig.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<top>'}: {err['msg']}"
                             for err in e.errors())
        raise RsrError(f"{path}: {problems}") from e
    base = path.resolve().parent
    cfg.output_dir = resolve(cfg.output_dir, base)
    from rsr.user_paths import output_dir as writable_dir  # a file or unwritable: one line, now

    writable_dir(cfg.output_dir, "--output-dir" if output_dir is not None else f"{path}: output_dir")
    cfg.pool.paths = [resolve(p, base) for p in cfg.pool.paths]
    cfg.export.eval_paths = [resolve(p, base) for p in cfg.export.eval_paths]
    fixture = cfg.models.model_args.get("fixture")
    if isinstance(fixture, str):
        cfg.models.model_args["fixture"] = str(resolve(fixture, base))
    cfg.source_path = path.resolve()
    return cfg
