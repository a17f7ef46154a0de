"""Benchmark: wall time of light `rsr` commands, each in a fresh interpreter.

    python benchmarks/cli_startup.py            # 7 runs per command
    python benchmarks/cli_startup.py --runs 15 --check

Every command runs as a subprocess (`python -m rsr.cli.main ...`, what the `rsr` script does),
N times; the median is reported. Two baselines are timed the same way in the same invocation:
`python -c pass` (the interpreter alone, the floor) and `python -c "import inspect_ai, pandas"`
(what every command paid before it could parse its arguments when the CLI imported them
eagerly). The ratio column is command / that eager-import baseline. Target: under 0.5 s each.
With --check the exit status is 1 when any command misses the target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 0.5

COMMANDS: list[list[str]] = [
    ["--help"],
    ["tasks", "--help"],
    ["tasks", "lint", "tasks/core/hello-world"],
    ["tasks", "lint", "--json", "tasks/core"],
    ["doctor", "--help"],
    ["eval", "--help"],
    ["report", "--help"],
    ["leaderboard", "--help"],
    ["train", "--help"],
    ["factory", "--help"],
    ["trajectories", "--help"],
]


def _env() -> dict[str, str]:
    # The checkout under test comes first, as `PYTHONPATH=$PWD rsr ...` would have it.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def time_command(argv: list[str], runs: int) -> tuple[float, float, int]:
    """Median and min seconds over `runs` fresh interpreters, and the last exit status."""
    samples: list[float] = []
    rc = 0
    env = _env()
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, *argv], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - started)
        rc = done.returncode
    return statistics.median(samples), min(samples), rc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="Fresh interpreters per command (median reported).")
    parser.add_argument("--check", action="store_true", help=f"Exit 1 if any command takes {TARGET_S} s or more.")
    args = parser.parse_args()

    floor, floor_min, _ = time_command(["-c", "pass"], args.runs)
    eager, eager_min, eager_rc = time_command(["-c", "import inspect_ai, pandas"], args.runs)
    if eager_rc != 0:
        print("baseline `import inspect_ai, pandas` failed; is this the project's venv?", file=sys.stderr)
        return 2

    print(f"python {sys.version.split()[0]} on {os.cpu_count()} CPU(s), {args.runs} runs per row, "
          f"median (min) seconds, target < {TARGET_S} s\n")
    print(f"{'command':<44} {'median':>7} {'min':>7} {'vs eager':>9}  result")
    print(f"{'baseline: python -c pass':<44} {floor:7.3f} {floor_min:7.3f} {floor / eager:8.2f}x")
    print(f"{'baseline: import inspect_ai, pandas':<44} {eager:7.3f} {eager_min:7.3f} {1:8.2f}x")
    missed = []
    for argv in COMMANDS:
        median, fastest, rc = time_command(["-m", "rsr.cli.main", *argv], args.runs)
        verdict = "ok" if median < TARGET_S else "OVER TARGET"
        if rc not in (0, 1):  # lint exits 1 on an invalid task, which is still a finished command
            verdict += f" (exit {rc})"
        if median >= TARGET_S:
            missed.append(argv)
        label = "rsr " + " ".join(argv)
        print(f"{label:<44} {median:7.3f} {fastest:7.3f} {median / eager:8.2f}x  {verdict}")
    print(f"\n{len(COMMANDS) - len(missed)}/{len(COMMANDS)} commands under {TARGET_S} s")
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
