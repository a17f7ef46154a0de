"""Supervised fine-tuning (full or LoRA) with TRL's SFTTrainer, from a recipe to a run directory.

    <output_dir>/
      base/            the tiny model and tokenizer as built (tiny recipes only)
      checkpoints/     trainer checkpoints (resumed from when present)
      final/           model (or LoRA adapter) + tokenizer + chat template, for transformers/vLLM
      run_card.json    recipe, data hashes and counts, git commit, losses
      loss_curve.png

Works unchanged under `accelerate launch` (FSDP2 / DeepSpeed ZeRO-3): the trainer reads the
distributed setup from the environment; only rank 0 writes the run card and the plot.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from rsr.errors import RsrError
from rsr.training.config import TrainRecipe
from rsr.training.data import (
    LengthStats,
    LoadedDataset,
    MaskCheckError,
    compare_mask,
    expected_assistant_mask,
    fit_to_length,
    load_dataset,
    mix,
    token_ids,
    validation_tasks,
)
from rsr.training.render import (
    DEFAULT_CHAT_TEMPLATE,
    MODEL_TEMPLATE,
    load_chat_template,
    render_messages,
)
from rsr.training.runcard import LOSS_PNG, RUN_CARD, DatasetCard, RunCard, git_state, plot_loss

_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}


def _require_train_extra() -> None:
    try:
        import peft  # noqa: F401
        import trl  # noqa: F401
    except ImportError as e:
        raise RsrError(f"training needs the [train] extra: pip install -e '.[train]' ({e})") from e


def _load_tokenizer(recipe: TrainRecipe) -> tuple[Any, str]:
    """The checkpoint's tokenizer and the chat template to train with: the tokenizer's own
    (`chat_template: model`, the default, so a served checkpoint renders prompts as it was
    trained) or a packaged/file template."""
    from transformers import AutoTokenizer

    assert recipe.model.path is not None
    try:
        tok = AutoTokenizer.from_pretrained(recipe.model.path,
                                            trust_remote_code=recipe.model.trust_remote_code)
    except OSError as e:  # not a local checkpoint, and not on (or no access to) the hub
        raise RsrError(f"model.path {recipe.model.path!r}: cannot load its tokenizer ({e});"
                       " give a checkpoint directory or a hub id") from e
    if recipe.chat_template == MODEL_TEMPLATE:
        if not isinstance(tok.chat_template, str) or not tok.chat_template:
            raise RsrError(f"model.path {recipe.model.path!r}: the tokenizer has no chat"
                           f" template of its own; set chat_template: {DEFAULT_CHAT_TEMPLATE}")
        template = tok.chat_template
    else:
        template = load_chat_template(recipe.chat_template)
    tok.chat_template = template
    _check_eos(tok, recipe.eos_token, recipe.model.path)
    tok.eos_token = recipe.eos_token
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok, template


def has_generation_markers(template: str) -> bool:
    return re.search(r"{%-?\s*generation\s*-?%}", template) is not None


def supports_reasoning(template: str) -> bool:
    """Whether the template renders an assistant message's `reasoning_content`."""
    probe = [{"role": "user", "content": "u"},
             {"role": "assistant", "content": "a", "reasoning_content": "rsr-probe-4f2a"}]
    try:
        return "rsr-probe-4f2a" in render_messages(probe, chat_template=template)
    except Exception:  # a template that rejects the probe does not render reasoning
        return False


def _check_eos(tokenizer: Any, eos: str, where: str) -> None:
    if token_ids(tokenizer, eos) != [tokenizer.convert_tokens_to_ids(eos)]:
        raise RsrError(f"{where}: the tokenizer has no single token {eos!r}; pick a chat template"
                       " and `eos_token` that match this model's vocabulary")


def _mask_check(rows: list[list[dict[str, str]]], tokenizer: Any, template: str, eos: str,
                limit: int | None) -> list[tuple[int, list[int], list[int]]]:
    checked = []
    for i, msgs in enumerate(rows[: limit or len(rows)]):
        try:
            ids, mask = expected_assistant_mask(tokenizer, template, msgs, eos)
        except MaskCheckError as e:
            raise MaskCheckError(f"training row {i}: {e}") from e
        checked.append((i, ids, mask))
    return checked


def _verify_prepared(train_dataset: Any, expected: list[tuple[int, list[int], list[int]]],
                     n_rows: int, packing: bool) -> tuple[int, int]:
    """Compare what the trainer will train on with the independently derived masks."""
    tokens = assistant = 0
    for ex in train_dataset:
        tokens += len(ex["input_ids"])
        assistant += sum(1 for label in ex["labels"] if label != -100)
    if packing:
        want = sum(sum(mask) for _, _, mask in expected)
        if len(expected) == n_rows and want != assistant:
            raise MaskCheckError(f"packed data trains {assistant} tokens; the assistant replies"
                                 f" have {want}")
        return tokens, assistant
    if len(train_dataset) != n_rows:
        raise MaskCheckError(f"the trainer kept {len(train_dataset)} of {n_rows} rows")
    for i, ids, mask in expected:
        ex = train_dataset[i]
        problem = compare_mask(i, ids, mask, ex["input_ids"], ex["labels"])
        if problem:
            raise MaskCheckError(problem)
    return tokens, assistant


@dataclass
class _Data:
    """The training rows after validation, the length policy and mixing."""

    loaded: list[LoadedDataset]
    per_dataset: list[tuple[LoadedDataset, list[list[dict[str, str]]], LengthStats]]
    rows: list[list[dict[str, str]]]
    used: list[int]
    total: LengthStats
    validation: list[list[dict[str, str]]]
    validation_tasks: list[str]


def _sft_config(recipe: TrainRecipe, ckpt_dir: Path) -> Any:
    import torch
    from trl import SFTConfig

    t, d = recipe.train, recipe.data
    # Under FSDP the accelerate config's fsdp_activation_checkpointing does the recomputation;
    # the trainer's own flag would add a redundant all-gather in the backward pass.
    fsdp = os.environ.get("ACCELERATE_USE_FSDP", "").lower() in ("1", "true")
    return SFTConfig(
        output_dir=str(ckpt_dir),
        num_train_epochs=t.epochs,
        max_steps=t.max_steps,
        per_device_train_batch_size=t.per_device_batch_size,
        per_device_eval_batch_size=t.per_device_batch_size,
        gradient_accumulation_steps=t.gradient_accumulation_steps,
        learning_rate=t.learning_rate,
        lr_scheduler_type=t.lr_scheduler,
        warmup_steps=t.warmup_ratio,
        weight_decay=t.weight_decay,
        max_grad_norm=t.max_grad_norm,
        bf16=t.precision == "bf16",
        fp16=t.precision == "fp16",
        use_cpu=t.use_cpu or not torch.cuda.is_available(),
        activation_checkpointing=t.activation_checkpointing and not fsdp,
        seed=t.seed,
        data_seed=t.seed,
        logging_steps=t.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=t.save_steps,
        save_total_limit=t.save_total_limit,
        # The probe loss before the first step, measured inside train() where the model is
        # already wrapped for FSDP/ZeRO-3; no periodic evaluation after that.
        eval_on_start=True,
        eval_strategy="steps",
        eval_steps=10**9,
        report_to="none",
        max_length=d.max_length,
        packing=d.packing,
        assistant_only_loss=True,
        eos_token=recipe.eos_token,
        dataloader_num_workers=t.dataloader_num_workers,
    )


def _tokenizer(recipe: TrainRecipe, loaded: list[LoadedDataset], base_dir: Path,
               console: Console) -> tuple[Any, str]:
    from transformers import AutoTokenizer

    from rsr.training.tiny import train_tokenizer

    if recipe.model.tiny is None:
        return _load_tokenizer(recipe)
    # A tiny model is built here and has no template of its own: ours stands in for it.
    name = DEFAULT_CHAT_TEMPLATE if recipe.chat_template == MODEL_TEMPLATE else recipe.chat_template
    template = load_chat_template(name)
    if (base_dir / "config.json").is_file():
        # Resuming: the tokenizer is trained on the data, so reuse the one built first.
        return AutoTokenizer.from_pretrained(base_dir), template
    with console.status("training the tiny tokenizer"):
        texts = [render_messages([m.model_dump(exclude_none=True) for m in r.messages],
                                 chat_template=template)
                 for d in loaded for r in d.rows]
        return train_tokenizer(texts, recipe.model.tiny.vocab_size, template), template


def _data(recipe: TrainRecipe, loaded: list[LoadedDataset], tokenizer: Any, template: str,
          console: Console) -> _Data:
    cfg = recipe.data
    per_dataset = []
    held = validation_tasks([r for d in loaded for r in d.rows], cfg.validation_fraction,
                            cfg.validation_tasks, recipe.train.seed)
    validation: list[list[dict[str, str]]] = []
    with console.status("checking lengths"):
        for d in loaded:
            train_rows = [r for r in d.rows if r.task not in held]
            val_rows = [r for r in d.rows if r.task in held]
            rows_d, stats = fit_to_length(train_rows, tokenizer, template, cfg.max_length,
                                          cfg.long_trajectories, dataset=d.name)
            per_dataset.append((d, rows_d, stats))
            if val_rows:
                validation += fit_to_length(val_rows, tokenizer, template, cfg.max_length,
                                            cfg.long_trajectories, dataset=d.name)[0]
    rows, used = mix([(d.config, r) for d, r, _ in per_dataset], recipe.train.seed)
    if not rows:
        raise RsrError(f"no training rows left: every trajectory is longer than max_length"
                       f" {cfg.max_length} (policy {cfg.long_trajectories})")
    total = LengthStats()
    for _, _, s in per_dataset:
        total.add(s)
    console.print(f"rows: {len(rows)} (skipped too long: {total.rows_dropped_too_long}, split at"
                  f" hand-offs: {total.rows_split}, replies skipped: "
                  f"{total.steps_dropped_too_long})")
    for skipped in total.skipped[:20]:
        console.print(f"[yellow]skipped[/yellow] {skipped['dataset']} row {skipped['row']}"
                      f" ({skipped['task']}, {skipped['tokens']} > {skipped['max_length']} tokens)")
    if held:
        console.print(f"validation: {len(validation)} rows of {len(held)} held-out task(s):"
                      f" {', '.join(sorted(held))}")
    return _Data(loaded, per_dataset, rows, used, total, validation, sorted(held))


def _model(recipe: TrainRecipe, tokenizer: Any, base_dir: Path, args: Any) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    from rsr.training.tiny import build_model

    if recipe.model.tiny is not None:
        # Built and saved once (rank 0), then loaded by every rank: resume and merge reuse it.
        with args.main_process_first(desc="building the tiny base model"):
            if not (base_dir / "config.json").is_file():
                model = build_model(recipe.model.tiny, tokenizer, recipe.data.max_length,
                                    recipe.train.seed)
                model.save_pretrained(base_dir)
                tokenizer.save_pretrained(base_dir)
        return AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    kwargs: dict[str, Any] = {"dtype": _DTYPES.get(recipe.model.dtype, "auto"),
                              "trust_remote_code": recipe.model.trust_remote_code}
    if recipe.model.attn_implementation:
        kwargs["attn_implementation"] = recipe.model.attn_implementation
    model = AutoModelForCausalLM.from_pretrained(recipe.model.path, **kwargs)
    # Generation must stop on the template's end-of-turn token, whatever the base said.
    model.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids(recipe.eos_token)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def _peft_config(recipe: TrainRecipe) -> Any:
    import peft

    if recipe.method != "lora":
        return None
    assert recipe.lora is not None
    return peft.LoraConfig(
        r=recipe.lora.r, lora_alpha=recipe.lora.alpha, lora_dropout=recipe.lora.dropout,
        target_modules=recipe.lora.target_modules, modules_to_save=recipe.lora.modules_to_save,
        task_type="CAUSAL_LM")


def run(recipe: TrainRecipe, *, recipe_path: Path | None = None,
        console: Console | None = None) -> RunCard:
    """Train as the recipe says; returns the run card (also written to the output dir)."""
    _require_train_extra()
    import peft
    import torch
    import transformers
    import trl
    from datasets import Dataset
    from transformers.trainer_utils import get_last_checkpoint
    from trl import SFTTrainer

    console = console or Console(stderr=True)
    started = time.time()
    out = Path(recipe.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    base_dir, ckpt_dir, final = out / "base", out / "checkpoints", out / "final"
    # TrainingArguments first: under DeepSpeed ZeRO-3 it must exist before from_pretrained so
    # the weights are partitioned while loading instead of materialised on every rank.
    args = _sft_config(recipe, ckpt_dir)
    is_main = args.process_index == 0

    with console.status("loading datasets"):
        loaded = [load_dataset(d) for d in recipe.data.datasets]
    console.print("datasets: " + ", ".join(f"{d.name} ({len(d.rows)} rows)" for d in loaded))
    tokenizer, template = _tokenizer(recipe, loaded, base_dir, console)
    base_name = str(base_dir.resolve()) if recipe.model.tiny else str(recipe.model.path)
    _check_eos(tokenizer, recipe.eos_token, base_name)
    reasoning_rows = sum(any(m.reasoning_content for m in r.messages)
                         for d in loaded for r in d.rows)
    if reasoning_rows and not supports_reasoning(template):
        raise RsrError(f"{reasoning_rows} training row(s) carry the executor's reasoning"
                       f" (reasoning_content) but chat template {recipe.chat_template!r} does"
                       " not render it; use the model's own template (chat_template: model) or"
                       " one that renders reasoning_content, so it is not silently dropped")
    data = _data(recipe, loaded, tokenizer, template, console)
    # TRL derives the loss mask from {% generation %} markers; a model's own template rarely
    # has them, so then the rows are tokenized here and trained with the mask derived
    # independently from the inference prompts (checked on every row).
    pretokenized = not has_generation_markers(template)
    with console.status("checking the assistant mask"):
        expected = _mask_check(data.rows, tokenizer, template, recipe.eos_token,
                               None if pretokenized else recipe.data.mask_check_rows)

    def dataset(rows: list[list[dict[str, str]]], masks: Any = None) -> Any:
        if not pretokenized:
            return Dataset.from_list([{"messages": m} for m in rows])
        if masks is None:
            masks = [expected_assistant_mask(tokenizer, template, m, recipe.eos_token)
                     for m in rows]
        return Dataset.from_list([{"input_ids": ids, "assistant_masks": mask}
                                  for ids, mask in masks])

    if pretokenized:
        args.assistant_only_loss = False  # the mask comes with the rows
    probe = data.rows[: recipe.data.loss_probe_rows]
    evals = {"probe": dataset(probe)}
    if data.validation:
        evals["validation"] = dataset(data.validation)
    trainer = SFTTrainer(
        model=_model(recipe, tokenizer, base_dir, args),
        args=args,
        train_dataset=dataset(data.rows, [(ids, mask) for _, ids, mask in expected]
                              if pretokenized else None),
        eval_dataset=evals,
        processing_class=tokenizer,
        peft_config=_peft_config(recipe),
    )
    tokens, assistant_tokens = _verify_prepared(trainer.train_dataset, expected, len(data.rows),
                                                recipe.data.packing)
    console.print(f"assistant mask checked on {len(expected)} row(s): exact"
                  f" ({assistant_tokens} of {tokens} tokens trained)")

    resume = None
    if recipe.train.resume and ckpt_dir.is_dir():
        resume = get_last_checkpoint(str(ckpt_dir))
        if resume:
            console.print(f"resuming from {resume}")
    result = trainer.train(resume_from_checkpoint=resume)
    final_eval: dict[str, float] = {}
    for name, ds in evals.items():
        final_eval.update(trainer.evaluate(ds, metric_key_prefix=f"eval_{name}"))
    history = trainer.state.log_history  # restored from the checkpoint when resuming

    def first(key: str) -> float | None:
        return next((h[key] for h in history if key in h), None)

    loss_start, loss_end = first("eval_probe_loss"), final_eval["eval_probe_loss"]
    val_start = first("eval_validation_loss")
    val_end = final_eval.get("eval_validation_loss")

    trainer.save_model(str(final))
    if is_main:
        tokenizer.save_pretrained(final)
        if recipe.method == "full":
            trainer.model.generation_config.save_pretrained(final)

    commit, dirty = git_state()
    card = RunCard(
        name=recipe.name,
        method=recipe.method,
        recipe_path=str(recipe_path) if recipe_path else None,
        recipe_sha256=(hashlib.sha256(recipe_path.read_bytes()).hexdigest()
                       if recipe_path and recipe_path.is_file() else None),
        recipe=json.loads(recipe.model_dump_json()),
        git_commit=commit,
        git_dirty=dirty,
        base_model=base_name,
        # What was trained with: a tiny model has no template of its own, ours stood in for it.
        chat_template=(DEFAULT_CHAT_TEMPLATE if recipe.chat_template == MODEL_TEMPLATE and recipe.model.tiny
                       else recipe.chat_template),
        chat_template_sha256=hashlib.sha256(template.encode()).hexdigest(),
        reasoning_rows=reasoning_rows,
        final_dir=str(final.resolve()),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        runtime_s=round(time.time() - started, 1),
        versions={m.__name__: m.__version__ for m in (torch, transformers, trl, peft)},
        datasets=[
            DatasetCard(name=d.name, path=str(d.config.path), sha256=d.sha256,
                        weight=d.config.weight, rows_read=len(d.rows),
                        trailing_messages_stripped=d.trailing_messages_stripped,
                        rows_kept=s.rows_kept, rows_dropped_too_long=s.rows_dropped_too_long,
                        rows_split=s.rows_split, steps_kept=s.steps_kept,
                        steps_dropped_too_long=s.steps_dropped_too_long, rows_used=n)
            for (d, _, s), n in zip(data.per_dataset, data.used, strict=True)
        ],
        long_trajectory_policy=recipe.data.long_trajectories,
        max_length=recipe.data.max_length,
        rows=len(data.rows),
        rows_dropped_too_long=data.total.rows_dropped_too_long,
        steps_dropped_too_long=data.total.steps_dropped_too_long,
        rows_split=data.total.rows_split,
        skipped_too_long=data.total.skipped,
        tokens=tokens,
        assistant_tokens=assistant_tokens,
        mask_rows_checked=len(expected),
        mask_assistant_tokens_checked=sum(sum(m) for _, _, m in expected),
        loss_probe_rows=len(probe),
        train_loss_start=float(loss_start if loss_start is not None else "nan"),
        train_loss_end=float(loss_end),
        validation_tasks=data.validation_tasks,
        validation_rows=len(data.validation),
        validation_loss_start=float(val_start) if val_start is not None else None,
        validation_loss_end=float(val_end) if val_end is not None else None,
        logged_loss=[(int(h["step"]), float(h["loss"])) for h in history
                     if "loss" in h and "step" in h],
        global_steps=result.global_step,
        epochs=float(trainer.state.epoch or 0),
        resumed_from=resume,
        world_size=args.world_size,
        device=str(args.device),
    )
    if is_main:
        (out / RUN_CARD).write_text(card.model_dump_json(indent=2))
        plot_loss(card, out / LOSS_PNG)
        console.print(f"loss {card.train_loss_start:.3f} -> {card.train_loss_end:.3f};"
                      f" model in {final}; run card {out / RUN_CARD}")
    return card
