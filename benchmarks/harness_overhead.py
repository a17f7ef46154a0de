"""Benchmark: terminal-harness overhead per turn, and wall time saved by adaptive waiting.

A scripted model replays oracle-like work on a few core tasks through `rsr/terminus2`:
look around, unpack the task's solution and run solve.sh (with the generous duration a model
would give a build step), look again, then complete and confirm. Each task runs once with
`wait_mode=fixed` (the reference) and once with `wait_mode=adaptive`, serially.

Overhead per turn (from the fixed-wait runs) = turn wall time - model time - the sleeps asked
for: what the harness itself costs (tmux send-keys, screen capture, parsing, logging). The
fixed-wait runs are repeated on Inspect's compose provider (the previous path: one
`docker compose exec` per tmux call) for the side-by-side figure. Prints figures; nothing is
asserted.

    python benchmarks/harness_overhead.py
    python benchmarks/harness_overhead.py --tasks hello-world,semver-sort --json out.json
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import statistics
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.agent import as_solver
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from rsr.harness.terminus2 import STORE_RESULT, terminus2
from rsr.suites.inspect_tasks import suite_task
from rsr.suites.registry import resolve_suite_path
from rsr.tasks.load import load_dataset

DEFAULT_TASKS = "hello-world,csv-region-summary,semver-sort,git-recover-lost-work"
SOLVE_DURATION = 10.0   # what a model typically asks for a "run the script" step


def _output(reply: dict[str, Any]) -> ModelOutput:
    out = ModelOutput.from_content("mockllm/model", json.dumps(reply))
    out.usage = ModelUsage(input_tokens=1000, output_tokens=100, total_tokens=1100)
    return out


def _solution_archive(solution_dir: Path) -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(solution_dir.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(solution_dir)), recursive=False)
    return base64.b64encode(buffer.getvalue()).decode()


def script(solution_dir: Path) -> list[ModelOutput]:
    archive = _solution_archive(solution_dir)

    def turn(*commands: tuple[str, float], complete: bool = False) -> ModelOutput:
        return _output({"analysis": "scripted", "plan": "oracle-like replay",
                        "commands": [{"keystrokes": k, "duration": d} for k, d in commands],
                        "task_complete": complete})

    return [
        turn(("ls -la\n", 1.0)),
        turn((f"mkdir -p /solution && echo {archive} | base64 -d | tar xz -C /solution\n", 1.0),
             ("bash /solution/solve.sh > /tmp/solve.log 2>&1; echo solve-rc=$?\n",
              SOLVE_DURATION)),
        turn(("rm -rf /solution; tail -n 3 /tmp/solve.log; ls\n", 1.0)),
        turn(complete=True),
        turn(complete=True),
    ]


def run_once(task: str, solution_dir: Path, mode: str, log_dir: str, sandbox: str = "docker") -> dict[str, Any]:
    model = get_model("mockllm/model", custom_outputs=script(solution_dir))
    log = inspect_eval(suite_task("core", None, task, None, sandbox=sandbox),
                       solver=as_solver(terminus2(wait_mode=mode)), model=model,
                       log_dir=log_dir, display="none", max_sandboxes=1)[0]
    sample = (log.samples or [None])[0]
    if sample is None or sample.error is not None:
        raise SystemExit(f"{task} ({mode}) failed: {sample.error if sample else log.error}")
    timings = [m.metadata["rsr"]["timing"] for m in sample.messages
               if m.role == "assistant" and m.metadata and m.metadata["rsr"].get("timing")]
    score = next(iter(sample.scores.values())).value if sample.scores else {}
    return {
        "task": task, "mode": mode, "sandbox": sandbox,
        "passed": score.get("passed") if isinstance(score, dict) else None,
        "agent_sec": sample.store[STORE_RESULT]["elapsed_sec"],
        "turns": len(timings),
        "overhead_per_turn": [t["overhead_s"] for t in timings],
        "wait_sec": sum(t["wait_s"] for t in timings),
        "model_sec": sum(t["model_s"] for t in timings),
        "read_per_turn": [t.get("read_s", 0.0) for t in timings],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated core tasks")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args(argv)

    root = resolve_suite_path("core", None)
    loaded = {t.name: t for t in load_dataset(root, args.tasks.split(","), None).tasks}
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rsr-bench-") as log_dir:
        for name in args.tasks.split(","):
            for mode, sandbox in (("fixed", "docker"), ("adaptive", "docker"), ("fixed", "compose")):
                row = run_once(name, loaded[name].paths.solution_dir, mode, log_dir, sandbox)
                results.append(row)
                print(f"{name:24s} {sandbox:8s} {mode:8s} passed={row['passed']} agent={row['agent_sec']:6.2f}s"
                      f" wait={row['wait_sec']:6.2f}s turns={row['turns']}"
                      f" overhead/turn median={statistics.median(row['overhead_per_turn']):.3f}s")

    # With fixed waits the sleep is exactly the durations asked for, so the rest of a turn is
    # the harness's own cost (typing, reading the screen, parsing, logging).
    print("\nharness overhead per turn (fixed mode: turn time - model time - sleeps):")
    medians = {}
    for sandbox, label in (("docker", "rsr-docker + persistent channel"), ("compose", "compose (previous path)")):
        overheads = [o for r in results if r["mode"] == "fixed" and r["sandbox"] == sandbox
                     for o in r["overhead_per_turn"]]
        reads = [o for r in results if r["mode"] == "fixed" and r["sandbox"] == sandbox for o in r["read_per_turn"]]
        medians[sandbox] = statistics.median(overheads)
        print(f"  {label:32s} n={len(overheads):3d}  median {medians[sandbox]:.3f}s  mean "
              f"{statistics.mean(overheads):.3f}s  max {max(overheads):.3f}s   reading the screen: median "
              f"{statistics.median(reads):.3f}s")
    print(f"  ratio (rsr-docker / compose): {medians['docker'] / medians['compose']:.2f}x")
    fixed = {r["task"]: r for r in results if r["mode"] == "fixed" and r["sandbox"] == "docker"}
    adaptive = {r["task"]: r for r in results if r["mode"] == "adaptive"}
    total_fixed = sum(r["agent_sec"] for r in fixed.values())
    total_adaptive = sum(r["agent_sec"] for r in adaptive.values())
    print("\nagent wall time, fixed vs adaptive waiting:")
    for name in fixed:
        f, a = fixed[name]["agent_sec"], adaptive[name]["agent_sec"]
        print(f"  {name:24s} fixed {f:6.2f}s  adaptive {a:6.2f}s  saved {f - a:6.2f}s "
              f"({100 * (f - a) / f:4.1f}%)")
    print(f"  {'total':24s} fixed {total_fixed:6.2f}s  adaptive {total_adaptive:6.2f}s  saved "
          f"{total_fixed - total_adaptive:6.2f}s "
          f"({100 * (total_fixed - total_adaptive) / total_fixed:4.1f}%)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
