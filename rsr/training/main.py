"""The SFT run's entry point: load a recipe, apply the command line's overrides, train.

`rsr train RECIPE` (rsr/cli/train.py) and `python -m rsr.training RECIPE` (`accelerate launch
-m rsr.training`) both call `main`; the CLI sits above this module, never the reverse. Heavy
imports (torch, transformers, trl) happen when `main` runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(recipe: Path, output_dir: Path | None = None, max_steps: int | None = None,
         no_resume: bool = False) -> None:
    from rsr.bundled import find_file
    from rsr.training.config import load_recipe
    from rsr.training.sft import run

    recipe = find_file(recipe)  # `training/recipes/...` works from any directory
    r = load_recipe(recipe)
    if output_dir is not None:
        r.output_dir = output_dir
    if max_steps is not None:
        r.train.max_steps = max_steps
    if no_resume:
        r.train.resume = False
    run(r, recipe_path=recipe)


def parser() -> argparse.ArgumentParser:
    """`python -m rsr.training`'s options: the same names as `rsr train run`'s."""
    p = argparse.ArgumentParser(prog="python -m rsr.training", description=__doc__.splitlines()[0])
    p.add_argument("recipe", type=Path, metavar="RECIPE", help="Recipe YAML, e.g. training/recipes/tiny-cpu.yaml.")
    p.add_argument("--output-dir", type=Path, default=None, help="Override the recipe's output_dir.")
    p.add_argument("--max-steps", type=int, default=None, help="Override train.max_steps (quick trials).")
    p.add_argument("--no-resume", action="store_true", help="Ignore existing checkpoints.")
    return p
