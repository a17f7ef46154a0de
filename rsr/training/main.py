"""The SFT run's entry point: load a recipe, apply the command line's overrides, check, train.

`rsr train RECIPE` (rsr/cli/train.py) and `python -m rsr.training RECIPE` (`accelerate launch
-m rsr.training`) both call `main`; the CLI sits above this module, never the reverse. Every
problem of the recipe is found (rsr/training/check.py) before the heavy imports (torch,
transformers, trl) and before `accelerate launch`'s processes start talking to each other.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def recipe_file(recipe: Path | str) -> Path:
    """The recipe typed on the command line: the working directory's, or `rsr:REL` (shipped)."""
    from rsr.bundled import bundled
    from rsr.config_paths import SHIPPED, command_line_path
    from rsr.errors import RsrError

    path = command_line_path(recipe)
    if not path.is_file():
        hint = (f"; rsr ships one: {SHIPPED}{recipe}" if not str(recipe).startswith(SHIPPED)
                and bundled(Path(recipe).as_posix()) is not None else "")
        where = "" if Path(recipe).is_absolute() else f" (relative to the working directory {Path.cwd()})"
        raise RsrError(f"{path}: recipe file not found{where}{hint}")
    return path


def main(recipe: Path, output_dir: Path | None = None, max_steps: int | None = None,
         no_resume: bool = False, check: bool = False,
         accelerate_config: Path | None = None) -> dict[str, object] | None:
    """Train as the recipe says; with `check`, only check it (returns the check's summary)."""
    from rsr.config_paths import command_line_path
    from rsr.training.check import check_recipe
    from rsr.training.config import load_recipe

    path = recipe_file(recipe)
    r = load_recipe(path)
    if output_dir is not None:
        r.output_dir = command_line_path(output_dir)
    if max_steps is not None:
        r.train.max_steps = max_steps
    if no_resume:
        r.train.resume = False
    summary = check_recipe(r, path, command_line_path(accelerate_config) if accelerate_config else None)
    if check:
        return summary
    from rsr.training.sft import run

    run(r, recipe_path=path)
    return None


def parser() -> argparse.ArgumentParser:
    """`python -m rsr.training`'s options: the same names as `rsr train run`'s."""
    p = argparse.ArgumentParser(prog="python -m rsr.training", description=__doc__.splitlines()[0])
    p.add_argument("recipe", type=Path, metavar="RECIPE", help="Recipe YAML, e.g. training/recipes/tiny-cpu.yaml.")
    p.add_argument("--output-dir", type=Path, default=None, help="Override the recipe's output_dir.")
    p.add_argument("--max-steps", type=int, default=None, help="Override train.max_steps (quick trials).")
    p.add_argument("--no-resume", action="store_true", help="Ignore existing checkpoints.")
    p.add_argument("--check", action="store_true",
                   help="Check the recipe (datasets, model, output_dir, [train] extra) and exit.")
    p.add_argument("--accelerate-config", type=Path, default=None,
                   help="With --check: also check this accelerate config file.")
    return p
