"""Benchmark: wall time of light `rsr` commands, each in a fresh interpreter.

    python benchmarks/cli_startup.py            # 7 runs per command
    python benchmarks/cli_startup.py --runs 15 --check

Every command runs as a subprocess (`python -m rsr.cli.main ...`, what the `rsr` script does),
N times, the rows taking turns; the median is reported. Two baselines are timed the same way in the same invocation:
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


def _env(checkout: Path = REPO) -> dict[str, str]:
    # The checkout under test comes first, as `PYTHONPATH=$PWD rsr ...` would have it. (`-m` also
    # puts the working directory first, so each row runs inside its own checkout too.)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout), env.get("PYTHONPATH", "")) if p)
    return env


def _time_once(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], cwd=env["PYTHONPATH"].split(os.pathsep)[0], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, done.returncode


def time_all(rows: dict[str, tuple[list[str], dict[str, str]]], runs: int) -> dict[str, tuple[float, float, int]]:
    """Median and min seconds over `runs` fresh interpreters per row, and the last exit status.

    Rows take turns (round-robin, not one row's runs back to back), so a burst of load from
    other processes on a shared machine hits baselines and commands alike and the ratios hold.
    """
    samples: dict[str, list[float]] = {label: [] for label in rows}
    status: dict[str, int] = {}
    for _ in range(runs):
        for label, (argv, env) in rows.items():
            seconds, status[label] = _time_once(argv, env)
            samples[label].append(seconds)
    return {label: (statistics.median(s), min(s), status[label]) for label, s in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="Fresh interpreters per command (median reported).")
    parser.add_argument("--check", action="store_true", help=f"Exit 1 if any command takes {TARGET_S} s or more.")
    parser.add_argument("--previous", type=Path, metavar="DIR",
                        help="An older checkout (e.g. `git archive 29f6d30 | tar -x -C DIR`) whose "
                             "`rsr --help` and `rsr tasks lint` are timed as further baselines.")
    args = parser.parse_args()

    env = _env()
    rows = {"baseline: python -c pass": (["-c", "pass"], env),
            "baseline: import inspect_ai, pandas": (["-c", "import inspect_ai, pandas"], env)}
    if args.previous:
        old = _env(args.previous.resolve())
        for argv in COMMANDS[:3]:
            rows[f"previous: rsr {' '.join(argv)}"] = (["-m", "rsr.cli.main", *argv], old)
    rows.update({"rsr " + " ".join(argv): (["-m", "rsr.cli.main", *argv], env) for argv in COMMANDS})
    results = time_all(rows, args.runs)
    eager = results["baseline: import inspect_ai, pandas"]
    if eager[2] != 0:
        print("baseline `import inspect_ai, pandas` failed; is this the project's venv?", file=sys.stderr)
        return 2

    print(f"python {sys.version.split()[0]} on {os.cpu_count()} CPU(s), {args.runs} runs per row, "
          f"median (min) seconds, target < {TARGET_S} s\n")
    print(f"{'command':<50} {'median':>7} {'min':>7} {'vs eager':>9}  result")
    missed = []
    for label, (median, fastest, rc) in results.items():
        verdict = ""
        if label.startswith("rsr "):
            verdict = "ok" if median < TARGET_S else "OVER TARGET"
            if rc not in (0, 1):  # lint exits 1 on an invalid task, which is still a finished command
                verdict += f" (exit {rc})"
            if median >= TARGET_S:
                missed.append(label)
        print(f"{label:<50} {median:7.3f} {fastest:7.3f} {median / eager[0]:8.2f}x  {verdict}".rstrip())
    print(f"\n{len(COMMANDS) - len(missed)}/{len(COMMANDS)} commands under {TARGET_S} s")
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
