"""Benchmark: per-sample sandbox cost, one exec, and the verifier, rsr-docker vs compose.

Both providers run in the same invocation on the same task and engine, so the ratio is fair
even on a loaded machine:

- start + stop per sample: the marginal wall time of extra null-agent samples (n samples minus
  1 sample, over n - 1), minus the verifier's own time;
- one exec: median of `true` run through `sandbox().exec` inside a sample;
- verifier: its time per sample with the oracle (snapshot + audit + strict reading on
  rsr-docker; on compose the same verifier finds the container through Inspect's provider).
  `--in-place` also times the old in-container path on rsr-docker for the added cost.

    python benchmarks/sandbox_overhead.py
    python benchmarks/sandbox_overhead.py --samples 8 --suite      # plus the core-suite oracle
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from inspect_ai import eval as inspect_eval
from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.util import sandbox, store

from rsr.harness.null import null
from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import suite_task

PROVIDERS = {"rsr-docker": "docker", "compose": "compose"}
TASK = "hello-world"


@agent
def exec_probe(n: int) -> Agent:
    async def execute(state: AgentState) -> AgentState:
        times = []
        for _ in range(n):
            t0 = time.monotonic()
            await sandbox().exec(["true"])
            times.append(time.monotonic() - t0)
        store().set("exec_times", times)
        return state

    return execute


def _run(sandbox_kind: str, solver: Agent, epochs: int, log_dir: str, max_sandboxes: int = 1,
         tasks: str | None = TASK) -> tuple[float, list]:
    started = time.monotonic()
    logs = inspect_eval(suite_task("core", None, tasks, None, sandbox=sandbox_kind), solver=solver,
                        model="mockllm/model", epochs=epochs, max_sandboxes=max_sandboxes,
                        log_dir=log_dir, display="none")
    return time.monotonic() - started, logs[0].samples or []


def start_stop(sandbox_kind: str, samples: int, log_dir: str) -> float:
    # Serial, so each sample's time is its own; the marginal wall time of extra samples is the
    # honest start + stop + verify figure (Inspect's total_time leaves part of both out).
    one, _ = _run(sandbox_kind, null(), 1, log_dir)
    wall, rows = _run(sandbox_kind, null(), samples, log_dir)
    verifier = statistics.median(s.scores["verifier"].metadata.get("verifier_duration_sec") or 0.0 for s in rows)
    return (wall - one) / (samples - 1) - verifier


def exec_latency(sandbox_kind: str, log_dir: str) -> float:
    _, rows = _run(sandbox_kind, exec_probe(30), 1, log_dir)
    return statistics.median(rows[0].store["exec_times"])


def verifier_time(sandbox_kind: str, samples: int, log_dir: str) -> float:
    _, rows = _run(sandbox_kind, oracle(), samples, log_dir)
    assert all(s.scores["verifier"].value["passed"] == 1 for s in rows), "the oracle must pass"
    return statistics.median(s.scores["verifier"].metadata["verifier_duration_sec"] for s in rows)


@agent
def oracle_then_in_place() -> Agent:
    """The oracle, then the previous (in-container) verifier path, timed, on the same sandbox."""
    inner = oracle()

    async def execute(state: AgentState) -> AgentState:
        from inspect_ai.solver._task_state import sample_state

        from rsr.tasks.load import task_from_metadata
        from rsr.verify.verifier import _verify_in_place

        state = await inner(state)
        task = task_from_metadata(sample_state().metadata)
        t0 = time.monotonic()
        result = await _verify_in_place(task, sandbox(), time.monotonic(), "warn")
        store().set("in_place", {"sec": time.monotonic() - t0, "passed": result.passed})
        return state

    return execute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=6, help="samples per figure")
    parser.add_argument("--suite", action="store_true", help="also time the oracle over the core suite")
    parser.add_argument("--max-sandboxes", type=int, default=4)
    args = parser.parse_args()
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as log_dir:
        for name, kind in PROVIDERS.items():
            _run(kind, null(), 1, log_dir)  # warm: image built, engine caches hot
            rows[name] = {"start+stop": start_stop(kind, args.samples, log_dir),
                          "exec": exec_latency(kind, log_dir),
                          "verifier": verifier_time(kind, args.samples, log_dir)}
        _, in_place = _run("docker", oracle_then_in_place(), args.samples, log_dir)
        old = statistics.median(s.store["in_place"]["sec"] for s in in_place)
        suite_rows = {}
        if args.suite:
            for name, kind in PROVIDERS.items():
                wall, samples = _run(kind, oracle(), 1, log_dir, args.max_sandboxes, tasks=None)
                passed = sum(1 for s in samples if s.scores["verifier"].value["passed"] >= 1)
                suite_rows[name] = (wall, passed, len(samples))
    base = rows["compose"]
    print(f"\nper sample ({TASK}, serial, {args.samples} samples each, same invocation):")
    print(f"  {'':14s} {'rsr-docker':>11s} {'compose':>11s} {'ratio':>7s}")
    for key in ("start+stop", "exec", "verifier"):
        new, ref = rows["rsr-docker"][key], base[key]
        print(f"  {key:14s} {new:10.3f}s {ref:10.3f}s {new / ref:6.2f}x")
    print(f"\nverifier on rsr-docker: snapshot + audit + host-side reward {rows['rsr-docker']['verifier']:.3f}s vs "
          f"the previous in-container path {old:.3f}s on the same sandboxes: "
          f"+{rows['rsr-docker']['verifier'] - old:.3f}s per sample")
    for name, (wall, passed, total) in suite_rows.items():
        print(f"core suite oracle on {name}: {wall:.1f}s, {passed}/{total} passed "
              f"(max_sandboxes={args.max_sandboxes})")


if __name__ == "__main__":
    main()
