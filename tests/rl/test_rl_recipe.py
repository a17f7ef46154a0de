"""The shipped RL configs load, and TRL accepts what they become (no GPU here: nothing runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsr.rl.config import load_rl_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", ["training/rl/grpo-qwen-27b.yaml", "examples/rl-tiny.yaml"])
def test_rl_config_does_build_a_trl_grpo_config(path: str, tmp_path: Path) -> None:
    pytest.importorskip("trl")
    from rsr.rl.grpo import _grpo_args, _peft_config

    cfg = load_rl_config(ROOT / path)
    args = _grpo_args(cfg, tmp_path)
    g = cfg.grpo
    # One generation per optimizer step: every group of G lands in the same batch.
    assert args.generation_batch_size == g.num_generations * g.tasks_per_step
    assert args.generation_batch_size % args.num_generations == 0
    assert (args.beta, args.epsilon, args.loss_type) == (g.beta, g.epsilon, g.loss_type)
    assert args.epsilon_high == g.epsilon_high  # None: TRL uses epsilon for both sides
    if cfg.method == "lora":
        assert _peft_config(cfg).r == cfg.lora.r


def test_27b_rl_recipe_does_start_from_our_merged_sft_checkpoint() -> None:
    from rsr.training.config import load_recipe

    cfg = load_rl_config(ROOT / "training/rl/grpo-qwen-27b.yaml")
    sft = load_recipe(ROOT / "training/recipes/lora-qwen-27b.yaml")
    assert cfg.model == str(ROOT / f"checkpoints/{sft.name}-merged")
    assert cfg.engine.kind == "vllm" and cfg.engine.base_url
    assert cfg.suite.name not in cfg.eval_suites


def test_rl_config_rejects_training_on_an_evaluation_suite(tmp_path: Path) -> None:
    from rsr.rl.config import RLConfigError

    path = tmp_path / "rl.yaml"
    path.write_text("name: x\nmodel: m\nsuite: {name: tb2}\noutput_dir: out\n")
    with pytest.raises(RLConfigError, match="evaluation suite"):
        load_rl_config(path)
