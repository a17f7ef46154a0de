"""Training recipes: one YAML file -> one typed `TrainRecipe`.

Unknown keys are rejected everywhere (a typo such as `learning_rat` must not silently keep
the default). Relative paths (datasets, a local model, a `.jinja` template, output_dir) are
the recipe file's folder's, from whatever directory it runs (rsr/config_paths.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rsr.config_paths import resolve, resolve_model
from rsr.errors import FileFormatError
from rsr.training.render import DEFAULT_CHAT_TEMPLATE, END_OF_TURN, MODEL_TEMPLATE
from rsr.yaml_model import load_yaml_model


class RecipeError(FileFormatError):
    """A recipe file is malformed; names the file and the offending field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TinyModelConfig(_Strict):
    """A tiny Qwen3-architecture model built from a config, with a byte-level BPE tokenizer
    trained on the training rows themselves. Nothing is downloaded."""

    vocab_size: int = Field(1024, ge=300, description="BPE vocabulary size (upper bound)")
    hidden_size: int = Field(128, ge=8)
    num_layers: int = Field(2, ge=1)
    num_heads: int = Field(2, ge=1)
    num_kv_heads: int = Field(1, ge=1)
    head_dim: int = Field(64, ge=4)
    intermediate_size: int = Field(128, ge=8)
    tie_word_embeddings: bool = Field(
        False, description="untied by default, as in large Qwen models; a LoRA on lm_head then"
        " adapts the output layer without touching the input embeddings")

    @model_validator(mode="after")
    def _heads_divide(self) -> TinyModelConfig:
        if self.num_heads % self.num_kv_heads:
            raise ValueError("num_heads must be a multiple of num_kv_heads")
        return self


class ModelConfig(_Strict):
    path: str | None = Field(None, description="HF hub id or local checkpoint directory")
    tiny: TinyModelConfig | None = Field(None, description="build a tiny model instead of loading")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    attn_implementation: str | None = Field(
        None, description="e.g. 'sdpa', 'flash_attention_2'; None lets transformers choose")
    trust_remote_code: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> ModelConfig:
        if (self.path is None) == (self.tiny is None):
            raise ValueError("set exactly one of `path` (load a checkpoint) or `tiny` (build one)")
        return self


class DatasetConfig(_Strict):
    path: Path = Field(description="JSONL file or a `datasets` directory (save_to_disk)")
    weight: float = Field(
        1.0, gt=0,
        description="mixing weight: each row is used `weight` times on average (2.0 repeats"
        " every row twice, 0.5 keeps a seeded random half)")
    name: str | None = Field(None, description="label in the run card; defaults to the file name")


class DataConfig(_Strict):
    datasets: list[DatasetConfig] = Field(min_length=1)
    max_length: int = Field(1024, ge=16, description="tokens per training row")
    long_trajectories: Literal["split", "skip"] = Field(
        "split",
        description="rows longer than max_length: 'split' splits them at their hand-off"
        " messages into the contexts the model saw and skips pieces that still do not fit;"
        " 'skip' skips the whole row. Never truncated (the ending is what matters most);"
        " every skipped row is listed in the run card.")
    packing: bool = False
    validation_fraction: float = Field(
        0.0, ge=0, lt=1,
        description="share of *tasks* (never of rows: rows of one task are near relatives)"
        " held out from training; their loss before and after training goes to the run card")
    validation_tasks: list[str] = Field(
        default_factory=list, description="tasks to hold out by name (with or without the"
        " fraction); rows without a task column always train")
    mask_check_rows: int | None = Field(
        256, ge=1, description="rows whose assistant mask is checked token by token (None = all)")
    loss_probe_rows: int = Field(
        32, ge=1, description="rows on which train_loss_start/end are measured")


class LoraConfig(_Strict):
    r: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.05, ge=0, lt=1)
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    modules_to_save: list[str] | None = None


class TrainConfig(_Strict):
    learning_rate: float = Field(2e-5, gt=0)
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup",
                          "cosine_with_min_lr"] = "cosine"
    warmup_ratio: float = Field(0.03, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    epochs: float = Field(3.0, gt=0)
    max_steps: int = Field(-1, description="overrides epochs when > 0")
    per_device_batch_size: int = Field(1, ge=1)
    gradient_accumulation_steps: int = Field(1, ge=1)
    precision: Literal["bf16", "fp16", "fp32"] = "bf16"
    activation_checkpointing: bool = True
    seed: int = 42
    logging_steps: int = Field(10, ge=1)
    save_steps: int = Field(500, ge=1)
    save_total_limit: int | None = Field(2, ge=1)
    resume: bool = Field(True, description="resume from the last checkpoint in output_dir")
    use_cpu: bool = Field(False, description="force CPU even when an accelerator is present")
    dataloader_num_workers: int = Field(0, ge=0)


class TrainRecipe(_Strict):
    name: str
    description: str = ""
    model: ModelConfig
    chat_template: str = Field(
        MODEL_TEMPLATE, description="'model': the checkpoint tokenizer's own chat template (what"
        " vLLM and hf/ apply when serving it; tiny models, which have none, use"
        f" {DEFAULT_CHAT_TEMPLATE}); or a packaged template name or a .jinja file")
    eos_token: str = Field(END_OF_TURN, description="token ending an assistant turn")
    method: Literal["full", "lora"] = "full"
    lora: LoraConfig | None = None
    data: DataConfig
    train: TrainConfig = TrainConfig()
    output_dir: Path

    @model_validator(mode="after")
    def _lora_when_lora(self) -> TrainRecipe:
        if self.method == "lora" and self.lora is None:
            self.lora = LoraConfig()
        if self.method == "full" and self.lora is not None:
            raise ValueError("`lora` is set but method is 'full'; set method: lora or drop `lora`")
        return self


def load_recipe(path: str | Path) -> TrainRecipe:
    """Read and validate a recipe, its relative paths resolved against its folder; errors name
    the file and the offending field."""
    path = Path(path)
    recipe = load_yaml_model(path, TrainRecipe, what="recipe file", error=RecipeError)
    base = path.resolve().parent
    for d in recipe.data.datasets:
        d.path = resolve(d.path, base)
    if recipe.model.path is not None:
        recipe.model.path = resolve_model(recipe.model.path, base)
    if recipe.chat_template.endswith(".jinja"):
        recipe.chat_template = str(resolve(recipe.chat_template, base))
    recipe.output_dir = resolve(recipe.output_dir, base)
    return recipe
