"""Benchmark: the oracle over the core suite under Harbor 0.26 and under rsr, side by side.

Same tasks, same concurrency, same engine, every round warm (one unmeasured round of each
first, so images are built and caches hot). Harbor runs on a copy of each task that allows
internet and uses the host network (harbor-here.md: this engine has no bridge, and Harbor 0.26
refuses `allow_internet = false` here); nothing in the core tasks uses the network, so the
work is the same. rsr runs `inspect eval rsr/harbor -T path=tasks/core --solver rsr/oracle`
on `rsr-docker` (and, for reference, on Inspect's compose provider, the previous path).

    python benchmarks/vs_harbor.py                       # all core tasks, concurrency 4
    python benchmarks/vs_harbor.py --tasks 'hello-*,git-*' --concurrency 4 --no-compose

Harbor is installed into .cache/hvenv on first use (Python 3.12 from pyenv). Prints figures;
exits non-zero when a task fails under either runner (the comparison is then meaningless).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOST_NETWORK_COMPOSE = "services:\n  main:\n    build:\n      network: host\n    network_mode: host\n"


def harbor_bin() -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from harbor_ref import harbor_home  # the same installer the differential tests use

    return harbor_home() / "bin" / "harbor"


def harbor_copy(tasks: list[Path], dest: Path) -> Path:
    dataset = dest / "core-for-harbor"
    dataset.mkdir(parents=True)
    for task in tasks:
        copy = dataset / task.name
        shutil.copytree(task, copy)
        toml = copy / "task.toml"
        toml.write_text(toml.read_text().replace("allow_internet = false", "allow_internet = true"))
        compose = copy / "environment" / "docker-compose.yaml"
        if not compose.exists():
            compose.write_text(HOST_NETWORK_COMPOSE)
    return dataset


def run_harbor(harbor: Path, dataset: Path, concurrency: int, jobs: Path) -> tuple[float, int, int]:
    out = jobs / f"round-{time.monotonic_ns()}"
    started = time.monotonic()
    subprocess.run([str(harbor), "run", "-p", str(dataset), "--agent", "oracle", "-n", str(concurrency),
                    "-o", str(out), "-y", "-q"], check=True, capture_output=True, text=True)
    wall = time.monotonic() - started
    passed = total = 0
    for result in out.rglob("result.json"):
        data = json.loads(result.read_text())
        if "verifier_result" not in data and "trial_name" not in data:
            continue  # the job-level summary
        total += 1
        rewards = (data.get("verifier_result") or {}).get("rewards") or {}
        ok = float(rewards.get("reward", 0)) >= 1.0
        passed += int(ok)
        if not ok:
            why = (data.get("exception_info") or {}).get("exception_message") or rewards
            print(f"  harbor: {data.get('task_name')} did not pass: {str(why)[:300]}")
    return wall, passed, total


def run_rsr(sandbox: str, tasks: str | None, concurrency: int, log_dir: Path) -> tuple[float, int, int]:
    command = [str(REPO / ".venv" / "bin" / "inspect"), "eval", "rsr/harbor", "-T", f"path={REPO / 'tasks' / 'core'}",
               "-T", f"sandbox={sandbox}", "--solver", "rsr/oracle", "--max-sandboxes", str(concurrency),
               "--max-samples", str(concurrency), "--log-dir", str(log_dir), "--display", "none"]
    if tasks:
        command += ["-T", f"tasks={tasks}"]
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, text=True)
    wall = time.monotonic() - started
    from inspect_ai.log import list_eval_logs, read_eval_log

    newest = max(list_eval_logs(str(log_dir)), key=lambda info: info.mtime)
    log = read_eval_log(newest)
    samples = log.samples or []
    passed = sum(1 for s in samples if s.scores and s.scores["verifier"].value["passed"] >= 1.0)
    return wall, passed, len(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=None, help="core task globs, comma-separated (default: all)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--no-compose", action="store_true", help="skip the previous (compose) path")
    parser.add_argument("--no-warmup", action="store_true")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(REPO))
    from rsr.tasks.load import load_dataset

    selected = [t.paths.task_dir for t in load_dataset(REPO / "tasks" / "core", args.tasks, None).tasks]
    harbor = harbor_bin()
    runners = {"harbor": None, "rsr (rsr-docker)": "docker"}
    if not args.no_compose:
        runners["rsr (compose, previous path)"] = "compose"
    with tempfile.TemporaryDirectory(prefix="rsr-vs-harbor-") as tmp:
        scratch = Path(tmp)
        dataset = harbor_copy(selected, scratch)

        def once(name: str, sandbox: str | None) -> tuple[float, int, int]:
            if sandbox is None:
                return run_harbor(harbor, dataset, args.concurrency, scratch / "jobs")
            return run_rsr(sandbox, args.tasks, args.concurrency, scratch / f"logs-{sandbox}")

        if not args.no_warmup:
            for name, sandbox in runners.items():
                print(f"warm-up: {name} ...", flush=True)
                once(name, sandbox)
        results = {}
        for name, sandbox in runners.items():
            results[name] = once(name, sandbox)
            wall, passed, total = results[name]
            print(f"{name:30s} {wall:7.1f} s  {passed}/{total} passed", flush=True)
    base = results["harbor"][0]
    print(f"\n{len(selected)} core tasks, oracle, concurrency {args.concurrency}, warm:")
    for name, (wall, _, _) in results.items():
        print(f"  {name:30s} {wall:7.1f} s   {wall / base:5.2f}x Harbor")
    failed = [name for name, (_, passed, total) in results.items() if passed != total or total != len(selected)]
    if failed:
        print(f"not every task passed under: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
