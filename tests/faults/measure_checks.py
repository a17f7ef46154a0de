"""The cost of the accounting checks (README, "How samples are counted"): run as
`PYTHONPATH=. python tests/faults/measure_checks.py`; prints seconds per check."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path


def main() -> None:
    from inspect_ai.util import registry_create

    import rsr._registry  # noqa: F401
    from rsr.sandbox.disk import docker_root, full_host_spaces, preflight
    from rsr.sandbox.fate import container_fate
    from rsr.sandbox.needs import tests_fetch

    started = time.perf_counter()
    preflight(Path(tempfile.mkdtemp()))
    print(f"disk preflight (once per run): {time.perf_counter() - started:.4f} s")
    task = registry_create("task", "rsr/core")
    started = time.perf_counter()
    for sample in task.dataset:
        tests_fetch(Path(str((sample.metadata or {})["task_dir"])) / "tests")
    print(f"test-script scan of {len(task.dataset)} core tasks (once per run): {time.perf_counter() - started:.4f} s")
    started = time.perf_counter()
    for _ in range(50):
        container_fate("no-such-container", agent_began=True)
    print(f"container fate (once per sample): {(time.perf_counter() - started) / 50:.5f} s")
    from rsr.sandbox import stops

    started = time.perf_counter()
    stops.watch()
    print(f"engine event stream start (once per run): {time.perf_counter() - started:.4f} s")
    started = time.perf_counter()
    for _ in range(1000):
        stops.watch()
    print(f"event stream check (once per sample start): {(time.perf_counter() - started) / 1000:.6f} s")
    started = time.perf_counter()
    for _ in range(200):
        full_host_spaces(Path(tempfile.gettempdir()), docker_root())
    print(f"free-space check (per failing sample): {(time.perf_counter() - started) / 200:.6f} s")


if __name__ == "__main__":
    main()
