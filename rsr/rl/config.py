"""RL configs: one YAML file -> one typed `RLConfig` (unknown keys are refused everywhere).

The GRPO fields keep TRL's names (`beta`, `epsilon`, `epsilon_high`, `loss_type`,
`scale_rewards`, `num_iterations`, ...) and are passed to `trl.GRPOConfig` unchanged, so TRL's
documentation is ours. Relative paths (model, suite.path, output_dir) are the config file's
folder's, from whatever directory it runs (rsr/config_paths.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rsr.config_paths import resolve, resolve_model
from rsr.errors import FileFormatError
from rsr.factory.config import DEFAULT_EVAL_SUITES
from rsr.training.config import LoraConfig
from rsr.yaml_model import load_yaml_model

HARNESSES = ("terminus2", "statem", "rsrt")


class RLConfigError(FileFormatError):
    """An RL config file is malformed; names the file and the offending field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SuiteConfig(_Strict):
    name: str = Field(description="rsr suite name (core, tb2, ...) or a label for `path`")
    path: Path | None = Field(None, description="task root; None = the registered suite's")
    tasks: list[str] | None = Field(None, description="task names to train on (None = all)")
    exclude: list[str] | None = None
    unpinned: bool = False


class HarnessConfig(_Strict):
    name: Literal["terminus2", "statem", "rsrt"] = "terminus2"
    args: dict[str, Any] = Field(
        default_factory=dict, description="harness arguments (max_episodes, wait_mode, ...);"
        " temperature and record_tokens are set by rsr rl")


class EngineConfig(_Strict):
    kind: Literal["vllm", "cpu"] = Field(
        "vllm", description="vllm: rollouts from vLLM (rsr starts it from the engine environment,"
        " or an OpenAI-compatible `vllm serve` at base_url); cpu: rsr's in-process policy server,"
        " only where vLLM cannot run (no engine environment)")
    base_url: str | None = Field(None, description="vllm: an already running server's …/v1 URL;"
                                 " unset: rsr starts one on a free port and stops it at the end")
    weight_sync: Literal["disk", "nccl"] | None = Field(
        None, description="how the trainer's weights reach vLLM before each step: disk (write"
        " safetensors, the engine reloads them in place; same machine) or nccl (TRL's weight"
        " transfer; GPUs). Default: disk when rsr starts the server, nccl for base_url")
    served_model_name: str = "policy"
    max_new_tokens: int = Field(128, ge=1, description="reply length limit per model call")
    max_model_len: int = Field(4096, ge=256, description="vllm started by rsr: context window")
    kv_cache_gib: int = Field(1, ge=1, description="vllm started by rsr on CPU: KV cache GiB")
    enforce_eager: bool = Field(
        False, description="vllm started by rsr: skip graph compilation (--enforce-eager): about"
        " half the start-up for tiny models on CPU, same decoding speed; large models decode"
        " faster compiled. Weight reloads work the same in both modes")

    @property
    def sync(self) -> str:
        return self.weight_sync or ("disk" if self.base_url is None else "nccl")


class GRPOSettings(_Strict):
    """Passed to `trl.GRPOConfig` under the same names."""

    learning_rate: float = Field(1e-5, gt=0)
    max_steps: int = Field(100, ge=1, description="GRPO steps (one generation + update each)")
    tasks_per_step: int = Field(2, ge=1, description="prompts (tasks) per step; each gets a group")
    num_generations: int = Field(4, ge=2, description="G: rollouts per task (one group)")
    temperature: float = Field(1.0, gt=0, description="sampling temperature, rollouts and loss")
    beta: float = Field(0.0, ge=0, description="KL coefficient (0: no reference model)")
    epsilon: float = Field(0.2, gt=0, description="clip range (lower)")
    epsilon_high: float | None = Field(None, gt=0, description="clip range (upper; None = epsilon)")
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo"] = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    num_iterations: int = Field(1, ge=1, description="updates per generation (mu)")
    max_completion_length: int = Field(2048, ge=1)
    max_grad_norm: float = Field(1.0, gt=0)
    weight_decay: float = 0.0
    lr_scheduler_type: str = "constant"
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    precision: Literal["bf16", "fp16", "fp32"] = "bf16"
    activation_checkpointing: bool = False
    seed: int = 0
    save_steps: int = Field(10, ge=1)
    save_total_limit: int | None = Field(2, ge=1)
    logging_steps: int = Field(1, ge=1)
    use_cpu: bool = False


class RLConfig(_Strict):
    name: str
    description: str = ""
    model: str = Field(description="policy to start from: an SFT run's `final/` directory"
                       " (the documented cold start) or any HF checkpoint")
    model_from: str | None = Field(
        None, description="the command that makes `model` (printed when it does not exist yet)")
    method: Literal["full", "lora"] = "full"
    lora: LoraConfig | None = None
    suite: SuiteConfig
    harness: HarnessConfig = HarnessConfig()
    sandbox: Literal["docker", "compose", "k8s"] = Field(
        "docker", description="docker: rsr-docker sandboxes (compose for multi-container tasks)")
    network: Literal["task", "none"] = "task"
    concurrency: int = Field(4, ge=1, description="samples (sandboxes) run at once")
    reward: Literal["reward", "process"] = Field(
        "reward", description="verifier score field: the task's reward, or the milestone"
        " fraction for milestone tasks")
    integrity: Literal["strict"] = Field(
        "strict", description="always strict: a sample whose integrity verdict is not clean"
        " (tampered, unchecked, warning) gets no positive reward and is counted")
    shuffle_rewards: bool = Field(
        False, description="control run: permute the rewards within each step (must not learn)")
    eval_suites: list[str] = Field(
        default_factory=lambda: list(DEFAULT_EVAL_SUITES),
        description="evaluation suites (the factory's contamination guard): never trained on")
    grpo: GRPOSettings = GRPOSettings()
    engine: EngineConfig = EngineConfig()
    resume: bool = Field(True, description="resume from the last checkpoint in output_dir")
    output_dir: Path

    @model_validator(mode="after")
    def _checks(self) -> RLConfig:
        if self.method == "lora" and self.lora is None:
            self.lora = LoraConfig()
        if self.method == "full" and self.lora is not None:
            raise ValueError("`lora` is set but method is 'full'; set method: lora or drop `lora`")
        if self.suite.name in self.eval_suites:
            raise ValueError(f"suite {self.suite.name!r} is an evaluation suite (eval_suites):"
                             " training on it would contaminate its scores")
        bad = {"temperature", "record_tokens"} & set(self.harness.args)
        if bad:
            raise ValueError(f"harness.args may not set {sorted(bad)}: rsr rl sets them")
        return self


def load_rl_config(path: str | Path) -> RLConfig:
    """Read and validate an RL config, its relative paths resolved against its folder; errors
    name the file and the offending field."""
    path = Path(path)
    cfg = load_yaml_model(path, RLConfig, what="RL config", error=RLConfigError)
    base = path.resolve().parent
    cfg.model = resolve_model(cfg.model, base)
    if cfg.suite.path is not None:
        cfg.suite.path = resolve(cfg.suite.path, base)
    cfg.output_dir = resolve(cfg.output_dir, base)
    return cfg
