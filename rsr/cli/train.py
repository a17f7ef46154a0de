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
    """`rsr train RECIPE` means `rsr train run RECIPE`; named subcommands still win."""

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=_DefaultRun,
    help="Supervised fine-tuning (full or LoRA) from a recipe: `rsr train RECIPE.yaml`.",
    no_args_is_help=True,
)


@app.command("run")
def run_cmd(
    recipe: Path = typer.Argument(..., help="Recipe YAML, e.g. training/recipes/tiny-cpu.yaml."),
    output_dir: Path | None = typer.Option(None, help="Override the recipe's output_dir."),
    max_steps: int | None = typer.Option(None, help="Override train.max_steps (quick trials)."),
    no_resume: bool = typer.Option(False, "--no-resume", help="Ignore existing checkpoints."),
) -> None:
    """Train as the recipe says (also the default: `rsr train RECIPE`)."""
    from rsr.training.main import main

    main(recipe, output_dir=output_dir, max_steps=max_steps, no_resume=no_resume)


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
