"""Benchmark: evidence bundle size and regrade time per sample, on the core suite.

    python benchmarks/bundle_size.py                       # every core task, oracle, 1 epoch
    python benchmarks/bundle_size.py --tasks 'hello-*,git-*' --check

Runs `rsr/core -T evidence=true` under the oracle (real Docker sandboxes), then regrades the log
from its bundles (`rsr.verify.regrade.regrade_log`: no model, no agent). Per sample it prints the
bundle's bytes (its record plus every blob the record names, i.e. what a third party needs), the
kept-changes archive's share of them, the live verifier's time (the score's
`verifier_duration_sec`, measured in this same invocation: the baseline) and the regrade's time,
with regrade/live as the ratio. Goal: a median bundle under 1 MB per sample; with --check the
exit status is 1 when the median misses it or a sample is not reproduced.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_BYTES = 1_000_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=None, help="core task globs (default: all)")
    parser.add_argument("--max-samples", type=int, default=2)
    parser.add_argument("--log-dir", type=Path, default=None)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)

    os.environ.setdefault("INSPECT_DISPLAY", "none")
    from inspect_ai import eval as inspect_eval

    from rsr.harness.oracle import oracle
    from rsr.suites.inspect_tasks import core
    from rsr.verify.evidence import BlobStore, SampleEvidence, record_of
    from rsr.verify.regrade import regrade_log

    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="rsr-bundle-bench-"))
    t0 = time.monotonic()
    [log] = inspect_eval(core(tasks=args.tasks, evidence=True), solver=oracle(), model="mockllm/model",
                         log_dir=str(log_dir), display="none", max_samples=args.max_samples, fail_on_error=False)
    eval_s = time.monotonic() - t0
    path = Path(log.location)
    store = BlobStore(path.parent / "evidence")
    live: dict[tuple[str, int], float] = {}
    sizes: dict[tuple[str, int], tuple[int, int]] = {}
    for s in log.samples or []:
        score = (s.scores or {}).get("verifier")
        key = (str(s.id), s.epoch)
        live[key] = float((score.metadata or {}).get("verifier_duration_sec") or 0.0) if score else 0.0
        digest = record_of(score.metadata if score else None)
        if digest is None:
            continue
        record = store.get_model(digest, SampleEvidence, "record")
        sizes[key] = (store.size([digest, *record.blobs()]), store.path(record.changes.archive).stat().st_size)

    t1 = time.monotonic()
    report = regrade_log(path)
    regrade_s = time.monotonic() - t1

    print(f"core under the oracle: {len(log.samples or [])} samples, eval {eval_s:.0f}s, regrade {regrade_s:.0f}s "
          f"(log {path})")
    print(f"{'sample':28} {'bundle KB':>10} {'archive KB':>10} {'live s':>7} {'regrade s':>9} {'ratio':>6}  status")
    regrade_times, ratios = [], []
    for r in report.samples:
        key = (r.id, r.epoch)
        bundle, archive = sizes.get(key, (0, 0))
        base = live.get(key) or 0.0
        ratio = (r.seconds / base) if (r.seconds and base) else None
        if r.seconds is not None:
            regrade_times.append(r.seconds)
        if ratio is not None:
            ratios.append(ratio)
        print(f"{r.id[:28]:28} {bundle / 1024:10.1f} {archive / 1024:10.1f} {base:7.2f} "
              f"{(r.seconds or 0.0):9.2f} {(f'{ratio:.2f}' if ratio else '-'):>6}  {r.status}")
    per_sample = [b for b, _ in sizes.values()]
    median = statistics.median(per_sample) if per_sample else 0
    print(f"\nbundle per sample: median {median / 1024:.1f} KB, max {max(per_sample, default=0) / 1024:.1f} KB, "
          f"total {sum(per_sample) / 1024:.1f} KB (blobs shared between samples are counted once per sample); "
          f"store on disk {sum(p.stat().st_size for p in store.root.rglob('*') if p.is_file()) / 1024:.1f} KB; "
          f"goal median < {GOAL_BYTES / 1e6:.0f} MB: {'met' if median < GOAL_BYTES else 'MISSED'}")
    if regrade_times:
        print(f"regrade per sample: median {statistics.median(regrade_times):.2f}s, "
              f"max {max(regrade_times):.2f}s; regrade/live verifier median "
              f"{statistics.median(ratios) if ratios else float('nan'):.2f}x; "
              f"{report.reproduced}/{len(report.samples)} reproduced")
    ok = median < GOAL_BYTES and report.ok
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
