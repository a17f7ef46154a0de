"""`rsr rl CONFIG`: GRPO rewarded by the verifier (TRL's GRPOTrainer, rollouts through Inspect).

Heavy imports happen inside the command, so `rsr --help` stays fast without the [train] extra.
"""

from __future__ import annotations

from pathlib import Path

import typer


def rl(
    config: Path = typer.Argument(..., help="RL config YAML, e.g. examples/rl-tiny.yaml."),
    output_dir: Path | None = typer.Option(None, help="Override the config's output_dir."),
    max_steps: int | None = typer.Option(None, min=1, help="Override grpo.max_steps."),
    shuffle_rewards: bool = typer.Option(
        False, "--shuffle-rewards", help="Control run: permute each step's rewards."),
    no_resume: bool = typer.Option(False, "--no-resume", help="Ignore existing checkpoints."),
    check: bool = typer.Option(
        False, "--check", help="Check everything the run needs (model, suite, output_dir, the"
        " [train] extra) and exit, loading no model."),
    accelerate_config: Path | None = typer.Option(
        None, help="With --check: also check this accelerate config file."),
) -> None:
    """GRPO with groups of rollouts per task, rewarded by the verifier (strict integrity);
    checkpoints, steps.jsonl and run_card.json under output_dir; resumes by default."""
    from rsr.rl.main import main

    summary = main(config, output_dir=output_dir, max_steps=max_steps,
                   shuffle_rewards=shuffle_rewards, no_resume=no_resume, check=check,
                   accelerate_config=accelerate_config)
    if summary is not None:
        typer.echo(f"{config}: ok ({', '.join(f'{k}: {v}' for k, v in summary.items())})")
