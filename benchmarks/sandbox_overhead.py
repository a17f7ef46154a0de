"""Benchmark: wall time of the oracle over the core suite, and per-sample sandbox overhead.

Per-sample overhead is measured with the null agent (no work) on one task: Inspect's sample
`total_time` (sandbox start, the agent, scoring, sandbox stop) and the verifier's own time, so
start + stop = total - verifier. Prints figures; nothing is asserted.

    python benchmarks/sandbox_overhead.py                 # core suite oracle + overhead
    python benchmarks/sandbox_overhead.py --samples 8 --skip-suite
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from inspect_ai import eval as inspect_eval

from rsr.harness.null import null
from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import suite_task


def _null_run(epochs: int, log_dir: str) -> tuple[float, list]:
    started = time.monotonic()
    logs = inspect_eval(suite_task("core", None, "hello-world", None), solver=null(), model="mockllm/model",
                        epochs=epochs, max_sandboxes=1, log_dir=log_dir, display="none")
    return time.monotonic() - started, logs


def overhead(samples: int, log_dir: str) -> None:
    # Serial (one sandbox at a time) so each sample's time is its own. Inspect's per-sample
    # total_time leaves out part of sandbox start and stop, so the marginal wall time of extra
    # samples (n samples minus 1 sample, over n - 1) is the honest start+stop+verify figure.
    one, _ = _null_run(1, log_dir)
    wall, logs = _null_run(samples, log_dir)
    totals, verifier = [], []
    for s in logs[0].samples or []:
        totals.append(s.total_time or 0.0)
        verifier.append(s.scores["verifier"].metadata.get("verifier_duration_sec") or 0.0)
    start_stop = [t - v for t, v in zip(totals, verifier, strict=True)]
    print(f"per-sample (null agent, hello-world, n={samples}, serial):")
    print(f"  total       median {statistics.median(totals):6.2f}s  min {min(totals):6.2f}s  max {max(totals):6.2f}s")
    print(f"  verifier    median {statistics.median(verifier):6.2f}s")
    print(f"  start+stop  median {statistics.median(start_stop):6.2f}s  (Inspect total_time - verifier)")
    marginal = (wall - one) / (samples - 1)
    print(f"  marginal wall per sample {marginal:6.2f}s = sandbox start + stop + verifier; "
          f"start + stop ~ {marginal - statistics.median(verifier):.2f}s "
          f"(1 sample {one:.1f}s, {samples} samples {wall:.1f}s)")


def suite(log_dir: str, max_sandboxes: int | None) -> None:
    started = time.monotonic()
    logs = inspect_eval(suite_task("core", None, None, None), solver=oracle(), model="mockllm/model",
                        log_dir=log_dir, display="none", max_sandboxes=max_sandboxes)
    wall = time.monotonic() - started
    samples = logs[0].samples or []
    passed = sum(1 for s in samples if s.scores["verifier"].value["passed"] >= 1)
    per_task = sorted(((s.total_time or 0.0, str(s.id)) for s in samples), reverse=True)
    print(f"core suite oracle: {len(samples)} tasks, {passed} passed, wall {wall:.1f}s "
          f"(images already built; max_sandboxes={max_sandboxes or 'default'})")
    print("  slowest samples: " + ", ".join(f"{n} {t:.1f}s" for t, n in per_task[:5]))
    print(f"  sum of sample times {sum(t for t, _ in per_task):.1f}s -> concurrency gain "
          f"{sum(t for t, _ in per_task) / wall:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=6, help="null-agent samples for the overhead figure")
    parser.add_argument("--skip-suite", action="store_true", help="only measure per-sample overhead")
    parser.add_argument("--max-sandboxes", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as log_dir:
        overhead(args.samples, log_dir)
        if not args.skip_suite:
            suite(log_dir, args.max_sandboxes)


if __name__ == "__main__":
    main()
