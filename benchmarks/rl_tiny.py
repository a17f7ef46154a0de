"""GRPO on the vLLM engine, rewarded by the rsr verifier on real Docker sandboxes: does the
reward rise more than a control's, seed after seed?

A tiny policy is cold-started by SFT (rsr.rl.coldstart: an even mix of four candidate
commands for the two rl-tiny tasks). vLLM (the engine environment) serves it once for the
whole measurement, in dev mode; every run pushes its weights to it before each step (disk +
in-place reload: rsr.rl.engine.DiskSyncEngine), its first push being the cold start itself.
For each seed, `rsr rl`'s machinery (TRL's GRPOTrainer, rollouts through inspect eval +
rsr/terminus2 + rsr-docker + the rsr-vllm provider) trains twice from the cold start: with
the verifier's rewards, and the control with the same rewards shuffled within each step.

    python benchmarks/rl_tiny.py [--seeds 0 1 2] [--steps N] [--window W] [--out DIR]

Per arm: the mean reward of the first W steps and of the last W steps (over every rollout of
every seed), and the gain last - first with a 95% interval (bootstrap over seeds and steps).
Last line: `rl: verifier gain=G [lo, hi] (first=F last=L); shuffled gain=... ; seeds=S steps=N`.
The figures are written to every run card and to OUT/summary.json.
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
              tasks_per_step: int, lr: float, base_url: str) -> dict:
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
        "engine": {"kind": "vllm", "base_url": base_url, "weight_sync": "disk",
                   "served_model_name": SERVED, "max_new_tokens": 96},
        "resume": False,
        "output_dir": str(out),
    }


SERVED = "policy"


def window_means(card: object, window: int) -> tuple[list[float], list[float]]:
    steps = card.steps  # type: ignore[attr-defined]
    return ([s.reward_mean for s in steps[:window]], [s.reward_mean for s in steps[-window:]])


def gain_interval(per_seed: list[tuple[list[float], list[float]]], draws: int = 4000,
                  seed: int = 0) -> tuple[float, float, float, float, float]:
    """(first, last, gain, lo, hi): gain = mean(last) - mean(first); the interval resamples
    seeds, then steps within each seed's windows (a percentile bootstrap)."""
    import random

    rng = random.Random(seed)

    def gain(sample: list[tuple[list[float], list[float]]]) -> float:
        first = [x for f, _ in sample for x in f]
        last = [x for _, lst in sample for x in lst]
        return sum(last) / len(last) - sum(first) / len(first)

    first = [x for f, _ in per_seed for x in f]
    last = [x for _, lst in per_seed for x in lst]
    gains = sorted(gain([(rng.choices(f, k=len(f)), rng.choices(lst, k=len(lst)))
                         for f, lst in rng.choices(per_seed, k=len(per_seed))])
                   for _ in range(draws))
    return (sum(first) / len(first), sum(last) / len(last), gain(per_seed),
            gains[int(0.025 * draws)], gains[int(0.975 * draws) - 1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--tasks-per-step", type=int, default=4,
                        help="groups (of 4 rollouts) per GRPO step")
    parser.add_argument("--lr", type=float, default=3e-4,
                        help="GRPO learning rate (2e-3 unlearns the reply format within 12 steps)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="GRPO seeds (the cold start uses the first)")
    parser.add_argument("--window", type=int, default=3, help="steps averaged at each end")
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
        collect_rows(rows, seed=args.seeds[0])
    sft_dir = out / "sft"
    if not (sft_dir / "final" / "config.json").is_file():
        sft_run(TrainRecipe.model_validate(recipe(rows, sft_dir, seed=args.seeds[0])), console=console)
    t_cold = time.time() - started

    from rsr.engine.server import ServeSpec, VllmServer, free_port
    from rsr.rl.engine import RL_SERVER_ARGS

    spec = ServeSpec(checkpoint=sft_dir / "final", served_name=SERVED, port=free_port(),
                     max_model_len=4096, dev_mode=True, log=out / "engine.log",
                     extra_args=RL_SERVER_ARGS)
    cards: dict[str, list] = {"verifier": [], "shuffled": []}
    with VllmServer(spec) as server:
        console.print(f"engine: {server.engine.label}, ready after {server.startup_s:.0f} s")
        for seed in args.seeds:
            for shuffle in (False, True):
                name = "shuffled" if shuffle else "verifier"
                cfg = RLConfig.model_validate(rl_config(
                    sft_dir / "final", out / f"rl-{name}-seed{seed}", args.steps, shuffle, seed,
                    args.tasks_per_step, args.lr, server.base_url))
                cards[name].append(rl_run(cfg, console=console))
        startup_s = server.startup_s

    summary: dict[str, object] = {
        "seeds": args.seeds, "steps": args.steps, "window": args.window,
        "rollouts_per_step": 4 * args.tasks_per_step, "lr": args.lr,
        "engine": server.engine.label, "engine_startup_s": startup_s,
        "cold_start_s": round(t_cold, 1), "wall_s": round(time.time() - started, 1)}
    lines = []
    for name, arm in cards.items():
        first, last, gain, lo, hi = gain_interval([window_means(c, args.window) for c in arm])
        summary[name] = {"first": round(first, 4), "last": round(last, 4), "gain": round(gain, 4),
                         "gain_95": [round(lo, 4), round(hi, 4)],
                         "per_step": [[round(s.reward_mean, 3) for s in c.steps] for c in arm],
                         "errors": sum(c.errors for c in arm),
                         "integrity_withheld": sum(c.integrity_withheld for c in arm)}
        lines.append(f"{name} gain={gain:+.3f} [{lo:+.3f}, {hi:+.3f}] (first={first:.3f} last={last:.3f})")
    for path in out.glob(f"rl-*/{RL_RUN_CARD}"):
        card = json.loads(path.read_text())
        card["benchmark"] = summary
        path.write_text(json.dumps(card, indent=2))
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    for name in cards:
        for seed, steps in zip(args.seeds, summary[name]["per_step"], strict=True):  # type: ignore[index]
            print(f"per-step reward ({name}, seed {seed}): {steps}")
    print(f"wall {summary['wall_s']:.0f} s (cold start {t_cold:.0f} s, engine start-up "
          f"{startup_s:.0f} s); summary {out / 'summary.json'}")
    print(f"rl: {'; '.join(lines)}; seeds={len(args.seeds)} steps={args.steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
