"""Benchmark: the verifier's time per sample, the deliverables boundary vs the previous design.

On the same sandbox, after the oracle has run, the verifier is timed alternately both ways:
- boundary (now): pause the agent container, read its upper layer, archive the deliverables,
  start a hardened container of the pristine image, apply them, residual audit, tests;
- commit (before): commit the whole agent container, start a container of the commit, audit
  the live agent container beside the tests.
Both read the reward host-side under strict integrity. Prints the medians and the difference.

    python benchmarks/verifier_boundary.py [--tasks hello-world,csv-region-summary,...] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.util import sandbox, store

from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

CORE = Path(__file__).resolve().parents[1] / "tasks" / "core"
DEFAULT_TASKS = "hello-world,csv-region-summary,semver-sort,sqlite-top-customers,kv-server-protocol"


@agent
def oracle_then_both(reps: int) -> Agent:
    inner = oracle()

    async def execute(state: AgentState) -> AgentState:
        from inspect_ai.solver._task_state import sample_state

        from rsr.tasks.load import task_from_metadata
        from rsr.verify.verifier import verify

        state = await inner(state)
        task = task_from_metadata(sample_state().metadata)
        times: dict[str, list[float]] = {"boundary": [], "commit": []}
        passed: dict[str, bool] = {}
        for _ in range(reps):
            for kind in ("boundary", "commit"):
                t0 = time.monotonic()
                result = await verify(task, sandbox(), integrity="strict", final=False, boundary=kind == "boundary")
                times[kind].append(time.monotonic() - t0)
                passed[kind] = result.passed
        store().set("times", times)
        store().set("passed", passed)
        return state

    return execute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as log_dir:
        logs = inspect_eval(tasks_task("core", CORE, args.tasks, None), solver=oracle_then_both(args.reps),
                            model="mockllm/model", display="none", log_dir=log_dir, max_samples=1)
        rows = {}
        for s in logs[0].samples or []:
            times, passed = s.store.get("times"), s.store.get("passed")
            assert times and passed and all(passed.values()), f"{s.id}: the oracle must pass both ways ({passed})"
            rows[str(s.id)] = {k: statistics.median(v) for k, v in times.items()}
    print("| task | commit (before) s | boundary (now) s | added s |")
    print("|---|---|---|---|")
    for task, r in sorted(rows.items()):
        print(f"| {task} | {r['commit']:.3f} | {r['boundary']:.3f} | {r['boundary'] - r['commit']:+.3f} |")
    before = statistics.median(r["commit"] for r in rows.values())
    now = statistics.median(r["boundary"] for r in rows.values())
    print(f"verifier: boundary {now:.3f}s vs commit {before:.3f}s per sample (median of {len(rows)} tasks x "
          f"{args.reps}): {now - before:+.3f}s added")


if __name__ == "__main__":
    main()
