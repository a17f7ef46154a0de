"""`rsr rl CONFIG`: GRPO on TRL's `GRPOTrainer` with rollouts through `inspect eval`.

    <output_dir>/
      checkpoints/   trainer checkpoints (resumed from when present)
      rollouts/      one Inspect log directory per step (token ids in each sample's store)
      steps.jsonl    per-step ledger: rewards, integrity withheld, token sources
      final/         the trained policy + tokenizer (a LoRA adapter when method: lora)
      run_card.json

TRL owns the algorithm (group advantages, clipping, KL, the optimizer, checkpoints); rsr
supplies `rollout_func`: push the current weights to the engine, run one Inspect eval with a
sample per (task, group member), and hand TRL each rollout's engine token ids with the
environment's tokens masked. The reward is the verifier's, after the integrity rule.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from rsr.errors import RsrError
from rsr.rl.config import RLConfig
from rsr.rl.rollout import run_rollouts, stitch
from rsr.rl.runcard import RL_RUN_CARD, STEPS_LOG, RLRunCard, StepRecord, append_step, read_steps
from rsr.training.runcard import git_state


def task_names(cfg: RLConfig) -> list[str]:
    if cfg.suite.tasks:
        return list(cfg.suite.tasks)
    from rsr.suites.registry import resolve_suite_path
    from rsr.tasks.load import load_dataset

    root = cfg.suite.path or resolve_suite_path(cfg.suite.name, None)
    loaded = load_dataset(Path(root), None, cfg.suite.exclude)
    if not loaded.tasks:
        raise RsrError(f"suite {cfg.suite.name!r}: no tasks under {root}")
    return [t.name for t in loaded.tasks]


def verifier_reward_func(shuffle: bool, seed: int) -> Any:
    """TRL reward function reading the rollout's verifier reward; the control permutes the
    rewards across the step's rollouts, breaking their link to what was done."""
    rng = random.Random(seed)

    def verifier(prompts: list[Any], completions: list[Any], rsr_reward: list[float],
                 **_: Any) -> list[float]:
        rewards = [float(r) for r in rsr_reward]
        if shuffle:
            rng.shuffle(rewards)
        return rewards

    return verifier


def _grpo_args(cfg: RLConfig, ckpt_dir: Path) -> Any:
    import torch
    from trl import GRPOConfig

    g = cfg.grpo
    return GRPOConfig(
        output_dir=str(ckpt_dir),
        max_steps=g.max_steps,
        per_device_train_batch_size=g.num_generations * g.tasks_per_step,
        gradient_accumulation_steps=1,
        num_generations=g.num_generations,
        learning_rate=g.learning_rate,
        lr_scheduler_type=g.lr_scheduler_type,
        warmup_steps=g.warmup_ratio,
        weight_decay=g.weight_decay,
        max_grad_norm=g.max_grad_norm,
        temperature=g.temperature,
        beta=g.beta,
        epsilon=g.epsilon,
        epsilon_high=g.epsilon_high,
        loss_type=g.loss_type,
        scale_rewards=g.scale_rewards,
        num_iterations=g.num_iterations,
        max_completion_length=g.max_completion_length,
        bf16=g.precision == "bf16" and torch.cuda.is_available(),
        fp16=g.precision == "fp16",
        use_cpu=g.use_cpu or not torch.cuda.is_available(),
        activation_checkpointing=g.activation_checkpointing,
        seed=g.seed,
        data_seed=g.seed,
        logging_steps=g.logging_steps,
        save_strategy="steps",
        save_steps=g.save_steps,
        save_total_limit=g.save_total_limit,
        report_to="none",
        log_completions=False,
    )


def _peft_config(cfg: RLConfig) -> Any:
    if cfg.method != "lora":
        return None
    import peft

    assert cfg.lora is not None
    return peft.LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                           target_modules=cfg.lora.target_modules,
                           modules_to_save=cfg.lora.modules_to_save, task_type="CAUSAL_LM")


def run(cfg: RLConfig, *, config_path: Path | None = None, console: Console | None = None,
        trainer_hook: Any = None) -> RLRunCard:
    """Train as the config says; returns the run card (also written to the output dir).
"""
    from rsr.rl.check import COLD_START
    from rsr.training.check import Problems, check_model

    # Before the heavy imports: a missing checkpoint is one line, not a hub repo-id error.
    problems = Problems(config_path)
    check_model(problems, "model", cfg.model, cfg.model_from, what=COLD_START)
    problems.raise_any()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    try:
        import peft
        import torch
        import transformers
        import trl
        from datasets import Dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.trainer_utils import get_last_checkpoint
        from trl import GRPOTrainer
    except ImportError as e:
        raise RsrError(f"rsr rl needs the [train] extra: pip install -e '.[train]' ({e})") from e

    from rsr.rl.engine import make_engine

    console = console or Console(stderr=True)
    started = time.time()
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_dir, final, steps_log = out / "checkpoints", out / "final", out / STEPS_LOG
    args = _grpo_args(cfg, ckpt_dir)
    try:
        tokenizer = AutoTokenizer.from_pretrained(cfg.model)
    except OSError as e:
        raise RsrError(f"model {cfg.model!r}: cannot load its tokenizer ({e}); give an SFT run's"
                       " final/ directory or a checkpoint") from e
    if not tokenizer.chat_template:
        raise RsrError(f"model {cfg.model!r}: the tokenizer has no chat template; rollouts are"
                       " rendered with the template the policy was trained with")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = torch.float32 if args.use_cpu else "auto"
    model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=dtype)

    names = task_names(cfg)
    per_step = cfg.grpo.tasks_per_step
    repeat = max(1, -(-per_step // len(names)))
    rows = names * repeat
    rows += names[: (-len(rows)) % per_step]
    dataset = Dataset.from_list([{"prompt": n} for n in rows])

    resume = get_last_checkpoint(str(ckpt_dir)) if cfg.resume and ckpt_dir.is_dir() else None
    resumed_step = int(resume.rsplit("-", 1)[-1]) if resume else 0
    # Steps generated after the last checkpoint are generated again on resume.
    kept = [s for s in read_steps(steps_log) if s.step < resumed_step]
    steps_log.write_text("".join(s.model_dump_json() + "\n" for s in kept))
    is_main = args.process_index == 0

    with make_engine(cfg.engine, model, tokenizer, cfg.grpo.seed,
                     cfg.grpo.max_completion_length, cfg.model, out) as engine:

        def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
            t0 = time.time()
            step = trainer.state.global_step
            version = engine.push(trainer.accelerator.unwrap_model(trainer.model))
            tasks = [str(p) for p in prompts]
            console.print(f"step {step}: {len(tasks)} rollouts of {len(set(tasks))} task(s)")
            rollouts = run_rollouts(cfg, tasks, engine.base_url,
                                    out / "rollouts" / f"step-{step:05d}", engine.max_tokens)
            seqs = [stitch(r.calls, tokenizer.pad_token_id) for r in rollouts]
            rewards = [r.reward for r in rollouts]
            record = StepRecord(
                step=step, rollouts=len(rollouts), reward_mean=sum(rewards) / len(rewards),
                raw_reward_mean=sum(r.raw_reward for r in rollouts) / len(rollouts),
                integrity_withheld=sum(r.raw_reward > 0 and r.reward <= 0 for r in rollouts),
                integrity_not_clean=sum(not r.integrity_ok for r in rollouts),
                errors=sum(r.error is not None for r in rollouts), rewards=rewards,
                tasks=tasks, weights_version=version, calls=sum(len(r.calls) for r in rollouts),
                calls_dropped=sum(s.calls_dropped for s in seqs),
                token_sources=dict(Counter(src for s in seqs for src in s.sources)),
                wall_s=round(time.time() - t0, 2))
            if is_main:
                append_step(steps_log, record)
            console.print(f"step {step}: reward {record.reward_mean:.3f} (withheld by integrity:"
                          f" {record.integrity_withheld}, errors: {record.errors},"
                          f" {record.wall_s:.0f} s)")
            return {"prompt_ids": [s.prompt_ids for s in seqs],
                    "completion_ids": [s.completion_ids for s in seqs],
                    "logprobs": [s.logprobs for s in seqs],
                    "env_mask": [s.env_mask for s in seqs],
                    "rsr_reward": rewards}

        trainer = GRPOTrainer(
            model=model, reward_funcs=[verifier_reward_func(cfg.shuffle_rewards, cfg.grpo.seed)],
            args=args, train_dataset=dataset, processing_class=tokenizer,
            peft_config=_peft_config(cfg), rollout_func=rollout_func)
        if trainer_hook is not None:
            trainer_hook(trainer, engine)
        if resume:
            console.print(f"resuming from {resume}")
        result = trainer.train(resume_from_checkpoint=resume)
        trainer.save_model(str(final))
        if is_main:
            tokenizer.save_pretrained(final)

    steps = read_steps(steps_log)
    if not steps:
        raise RsrError("no GRPO step ran (max_steps reached before training?)")
    commit, dirty = git_state()
    card = RLRunCard(
        name=cfg.name, method=cfg.method,
        config_path=str(config_path) if config_path else None,
        config_sha256=(hashlib.sha256(config_path.read_bytes()).hexdigest()
                       if config_path and config_path.is_file() else None),
        config=json.loads(cfg.model_dump_json()), git_commit=commit, git_dirty=dirty,
        base_model=str(cfg.model), final_dir=str(final.resolve()),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        runtime_s=round(time.time() - started, 1),
        versions={m.__name__: m.__version__ for m in (torch, transformers, trl, peft)},
        engine=cfg.engine.kind, shuffle_rewards=cfg.shuffle_rewards,
        global_steps=result.global_step, rollouts=sum(s.rollouts for s in steps),
        reward_first=steps[0].reward_mean, reward_last=steps[-1].reward_mean,
        integrity_withheld=sum(s.integrity_withheld for s in steps),
        integrity_not_clean=sum(s.integrity_not_clean for s in steps),
        errors=sum(s.errors for s in steps), steps=steps, resumed_from=resume,
        device=str(args.device))
    if is_main:
        (out / RL_RUN_CARD).write_text(card.model_dump_json(indent=2))
        console.print(f"reward {card.reward_first:.3f} -> {card.reward_last:.3f} over"
                      f" {len(steps)} step(s); policy in {final}; run card {out / RL_RUN_CARD}")
    return card
