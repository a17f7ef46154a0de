"""GRPO on CPU, rewarded by the rsr verifier on real Docker sandboxes: does the reward rise?

A tiny policy is cold-started by SFT (rsr.rl.coldstart: an even mix of four candidate
commands for the two rl-tiny tasks), then trained twice with `rsr rl`'s machinery (TRL's
GRPOTrainer, rollouts through inspect eval + rsr/terminus2 + rsr-docker, the CPU policy
server): once with the verifier's rewards and once, the control, with the same rewards
shuffled across each step's rollouts. Same seed, same steps. The reward must rise with the
real rewards and not with the shuffled ones.

    python benchmarks/rl_tiny.py [--steps N] [--out DIR]

Last line: `rl: reward first=F last=L shuffled_last=S steps=N` (means over the rollouts of
the first and of the last step). The figures are also written to both run cards.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def rl_config(model: Path, out: Path, steps: int, shuffle: bool, seed: int,
              tasks_per_step: int, lr: float) -> dict:
    from rsr.rl.coldstart import TINY_TASKS

    return {
        "name": "rl-tiny" + ("-shuffled" if shuffle else ""),
        "model": str(model),
        "suite": {"name": "rl-tiny", "path": str(TINY_TASKS)},
        "harness": {"name": "terminus2", "args": {"wait_mode": "adaptive", "max_episodes": 1}},
        "concurrency": 4,
        "shuffle_rewards": shuffle,
        "grpo": {"learning_rate": lr, "max_steps": steps, "tasks_per_step": tasks_per_step,
                 "num_generations": 4, "temperature": 0.5, "beta": 0.0,
                 "loss_type": "dapo", "max_completion_length": 1024, "precision": "fp32",
                 "seed": seed, "save_steps": 1000, "use_cpu": True},
        "engine": {"kind": "cpu", "max_new_tokens": 96},
        "resume": False,
        "output_dir": str(out),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--tasks-per-step", type=int, default=4,
                        help="groups (of 4 rollouts) per GRPO step")
    parser.add_argument("--lr", type=float, default=1e-3,
                        help="GRPO learning rate (2e-3 unlearns the reply format within 12 steps)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    from rich.console import Console

    from rsr.rl.coldstart import collect_rows, recipe
    from rsr.rl.config import RLConfig
    from rsr.rl.grpo import run as rl_run
    from rsr.rl.runcard import RL_RUN_CARD
    from rsr.training.config import TrainRecipe
    from rsr.training.sft import run as sft_run

    console = Console(stderr=True)
    out = args.out or Path(tempfile.mkdtemp(prefix="rsr-rl-tiny-"))
    started = time.time()
    rows = out / "coldstart" / "rows.jsonl"
    if not rows.is_file():
        console.print("cold start: scripted rollouts of the candidate mix (Docker)")
        collect_rows(rows, seed=args.seed)
    sft_dir = out / "sft"
    if not (sft_dir / "final" / "config.json").is_file():
        sft_run(TrainRecipe.model_validate(recipe(rows, sft_dir, seed=args.seed)), console=console)
    t_cold = time.time() - started

    cards = {}
    for shuffle in (False, True):
        name = "shuffled" if shuffle else "verifier"
        cfg = RLConfig.model_validate(rl_config(sft_dir / "final", out / f"rl-{name}",
                                                args.steps, shuffle, args.seed,
                                                args.tasks_per_step, args.lr))
        cards[name] = rl_run(cfg, console=console)
    real, ctrl = cards["verifier"], cards["shuffled"]
    summary = {"reward_first": real.reward_first, "reward_last": real.reward_last,
               "shuffled_first": ctrl.reward_first, "shuffled_last": ctrl.reward_last,
               "steps": real.global_steps, "cold_start_s": round(t_cold, 1),
               "rl_s": real.runtime_s, "shuffled_rl_s": ctrl.runtime_s,
               "wall_s": round(time.time() - started, 1)}
    for name in cards:
        path = out / f"rl-{name}" / RL_RUN_CARD
        card = json.loads(path.read_text())
        card["benchmark"] = summary
        path.write_text(json.dumps(card, indent=2))
    print(f"per-step reward (verifier): {[round(s.reward_mean, 3) for s in real.steps]}")
    print(f"per-step reward (shuffled): {[round(s.reward_mean, 3) for s in ctrl.steps]}")
    print(f"integrity withheld: {real.integrity_withheld}; errors: {real.errors}+{ctrl.errors};"
          f" wall {summary['wall_s']:.0f} s (cold start {t_cold:.0f} s); run cards under {out}")
    print(f"rl: reward first={real.reward_first:.3f} last={real.reward_last:.3f}"
          f" shuffled_last={ctrl.reward_last:.3f} steps={real.global_steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
