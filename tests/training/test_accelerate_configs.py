"""The shipped accelerate configs (FSDP2, DeepSpeed ZeRO-3) as accelerate itself reads them.

No GPU here, so nothing is launched (`accelerate launch --cpu` runs FSDP configs as a single
process); what can break silently is a config key accelerate does not know, or the FSDP run
not turning off the trainer's own activation checkpointing, which the launch environment
decides."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("accelerate")
pytest.importorskip("trl")
CONFIGS = Path(__file__).resolve().parents[2] / "training" / "accelerate"
RECIPES = CONFIGS.parent / "recipes"


@pytest.mark.parametrize("name", ["fsdp2.yaml", "deepspeed-zero3.yaml"])
def test_accelerate_configs_do_parse_under_accelerates_own_loader(name: str) -> None:
    from accelerate.commands.config.config_args import load_config_from_file

    # accelerate raises on keys it does not know: a typo would otherwise be ignored at launch.
    load_config_from_file(str(CONFIGS / name))


def test_fsdp2_launch_does_hand_activation_checkpointing_to_fsdp(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    from rsr.training.config import load_recipe
    from rsr.training.sft import _sft_config

    args = launch_command_parser().parse_args(
        ["--config_file", str(CONFIGS / "fsdp2.yaml"), "-m", "rsr.training", "recipe.yaml"])
    env = prepare_multi_gpu_env(_validate_launch_command(args)[0])
    assert env["ACCELERATE_USE_FSDP"] == "true" and env["FSDP_VERSION"] == "2"
    assert env["FSDP_ACTIVATION_CHECKPOINTING"] == "true"

    recipe = load_recipe(RECIPES / "tiny-cpu.yaml")
    recipe.train.activation_checkpointing = True
    assert _sft_config(recipe, tmp_path).activation_checkpointing is True
    monkeypatch.setenv("ACCELERATE_USE_FSDP", env["ACCELERATE_USE_FSDP"])
    assert _sft_config(recipe, tmp_path).activation_checkpointing is False
