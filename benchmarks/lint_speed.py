"""Benchmark: `rsr tasks lint --json` over thousands of generated task directories (no Docker).

    python benchmarks/lint_speed.py --tasks 3000
Prints tasks/s; the baseline column is a plain `tomllib` parse of the same task.toml files, so
the ratio shows what validation costs on top of reading TOML.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import tempfile
import time
import tomllib
from pathlib import Path

from rsr.cli.main import main as rsr_main

REPO = Path(__file__).resolve().parents[1]


def make_corpus(root: Path, n: int) -> None:
    templates = sorted(p for p in (REPO / "tasks/core").iterdir() if (p / "task.toml").is_file())
    for i in range(n):
        shutil.copytree(templates[i % len(templates)], root / f"task-{i:05d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_corpus(root, args.tasks)
        started = time.perf_counter()
        for path in root.glob("*/task.toml"):
            tomllib.loads(path.read_text())
        baseline = time.perf_counter() - started
        out = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out):
            rc = rsr_main(["tasks", "lint", str(root), "--json"])
        lint = time.perf_counter() - started
    print(f"{args.tasks} tasks: rsr tasks lint --json {lint:.2f}s ({args.tasks / lint:.0f} tasks/s, exit {rc}); "
          f"tomllib-only baseline {baseline:.2f}s; ratio {lint / baseline:.1f}x")


if __name__ == "__main__":
    main()
