"""The RL run's entry point: load the config, apply the command line's overrides, check, run GRPO.

`rsr rl CONFIG` (rsr/cli/rl.py) and `python -m rsr.rl CONFIG` (`accelerate launch -m rsr.rl`)
both call `main`; the CLI sits above this module, never the reverse. Every problem of the
config is found (rsr/rl/check.py) before the heavy imports (torch, trl) and before
`accelerate launch`'s processes start talking to each other.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(config: Path, output_dir: Path | None = None, max_steps: int | None = None,
         shuffle_rewards: bool = False, no_resume: bool = False, check: bool = False,
         accelerate_config: Path | None = None) -> dict[str, object] | None:
    """Run GRPO as the config says; with `check`, only check it (returns the check's summary)."""
    from rsr.config_paths import command_line_path
    from rsr.rl.check import check_rl_config
    from rsr.rl.config import load_rl_config

    path = command_line_path(config)
    cfg = load_rl_config(path)
    if output_dir is not None:
        cfg.output_dir = command_line_path(output_dir)
    if max_steps is not None:
        cfg.grpo.max_steps = max_steps
    if shuffle_rewards:
        cfg.shuffle_rewards = True
    if no_resume:
        cfg.resume = False
    summary = check_rl_config(cfg, path, command_line_path(accelerate_config) if accelerate_config else None)
    if check:
        return summary
    from rsr.rl.grpo import run

    run(cfg, config_path=path)
    return None


def parser() -> argparse.ArgumentParser:
    """`python -m rsr.rl`'s options: the same names as `rsr rl`'s."""
    p = argparse.ArgumentParser(prog="python -m rsr.rl", description=__doc__.splitlines()[0])
    p.add_argument("config", type=Path, metavar="CONFIG", help="RL config YAML, e.g. examples/rl-tiny.yaml.")
    p.add_argument("--output-dir", type=Path, default=None, help="Override the config's output_dir.")
    p.add_argument("--max-steps", type=int, default=None, help="Override grpo.max_steps.")
    p.add_argument("--shuffle-rewards", action="store_true", help="Control run: permute each step's rewards.")
    p.add_argument("--no-resume", action="store_true", help="Ignore existing checkpoints.")
    p.add_argument("--check", action="store_true",
                   help="Check the config (model, suite, output_dir, [train] extra) and exit.")
    p.add_argument("--accelerate-config", type=Path, default=None,
                   help="With --check: also check this accelerate config file.")
    return p
