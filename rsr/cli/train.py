"""`rsr train RECIPE` and `rsr train merge RUN_DIR --out CKPT`.

Heavy imports (torch, transformers, trl) happen inside the commands, so the CLI works without
the [train] extra until a training command actually runs.
"""

from __future__ import annotations

from pathlib import Path

import click
import typer
from typer.core import TyperGroup


class _DefaultRun(TyperGroup):
    """`rsr train RECIPE` (and `rsr train --check RECIPE`) means `rsr train run ...`; named
    subcommands and `--help` still win."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_DefaultRun,
    help="Supervised fine-tuning (full or LoRA) from a recipe: `rsr train RECIPE.yaml`"
         " (`rsr train --check RECIPE.yaml`: check everything, load no model).",
    no_args_is_help=True,
)


@app.command("run")
def run_cmd(
    recipe: Path = typer.Argument(..., help="Recipe YAML, e.g. training/recipes/tiny-cpu.yaml"
                                  " (or a shipped one: rsr:training/recipes/tiny-cpu.yaml)."),
    output_dir: Path | None = typer.Option(None, help="Override the recipe's output_dir."),
    max_steps: int | None = typer.Option(None, min=1, help="Override train.max_steps (quick trials)."),
    no_resume: bool = typer.Option(False, "--no-resume", help="Ignore existing checkpoints."),
    check: bool = typer.Option(
        False, "--check", help="Check everything the run needs (datasets, model, output_dir,"
        " the [train] extra) and exit, loading no model."),
    accelerate_config: Path | None = typer.Option(
        None, help="With --check: also check this accelerate config file."),
) -> None:
    """Train as the recipe says (also the default: `rsr train RECIPE`)."""
    from rsr.training.main import main

    summary = main(recipe, output_dir=output_dir, max_steps=max_steps, no_resume=no_resume,
                   check=check, accelerate_config=accelerate_config)
    if summary is not None:
        typer.echo(f"{recipe}: ok ({', '.join(f'{k}: {v}' for k, v in summary.items())})")


@app.command("merge")
def merge_cmd(
    run_dir: Path = typer.Argument(..., help="A finished LoRA run directory (has run_card.json)."),
    out: Path = typer.Option(..., "--out", help="Where to write the merged checkpoint."),
    base: str | None = typer.Option(None, help="Base model, if not the one in the run card."),
    dtype: str = typer.Option("auto", help="auto, bfloat16, float16 or float32."),
) -> None:
    """Fold a LoRA adapter into its base model (full weights for vLLM / transformers)."""
    from rsr.training.merge import merge

    path = merge(run_dir, out, base=base, dtype=dtype)
    typer.echo(f"merged checkpoint: {path}")
