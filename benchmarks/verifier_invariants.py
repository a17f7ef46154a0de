"""Benchmark: what each runtime invariant of the verifier costs per sample (README: the contract).

On two real containers of a small image (an "agent" one and a "verification" one), times the
operations each invariant adds to a verification, `--reps` times each, and prints the medians:

1. agent frozen: pause + unpause of the agent's container, plus the strict-mode look-ups
   (network peers, listening ports);
2. run ends at test.sh's exit: the exit watch (the same exec with and without it, alternately)
   plus RunEnd (its inspect before the run, freeze/list/kill/thaw after, two processes left);
4. pristine start probe: one exec of /bin/bash in the workdir;
(3 adds container options only; 5 is arithmetic.)

    python benchmarks/verifier_invariants.py [--image debian:bookworm-slim] [--reps 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from rsr.sandbox import engine
from rsr.verify import snapshot
from rsr.verify.verifier import probe_start

TEST_CMD = ["/bin/bash", "-c", "mkdir -p /tmp/v && echo 1 > /tmp/v/reward.txt; exit 0"]


def median_ms(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def start(image: str) -> str:
    created = engine.api().create_container(
        image, command=snapshot.KEEPALIVE, entrypoint=[], working_dir="/tmp",
        labels={engine.LABEL_SANDBOX: "rsr-bench", engine.LABEL_OWNER: str(os.getpid())},
        host_config=engine.api().create_host_config(network_mode="none"))
    engine.api().start(created["Id"])
    return created["Id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", default="debian:bookworm-slim")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    api = engine.api()
    agent, verifier = start(args.image), start(args.image)
    try:
        def frozen() -> None:
            with snapshot.agent_frozen(agent):
                pass

        def lookups() -> None:
            snapshot.network_peers(agent)
            snapshot.listening_ports(agent)

        def plain_run() -> None:
            engine.run_exec(verifier, TEST_CMD, timeout=60)

        def watched_run() -> None:
            engine.run_exec(verifier, TEST_CMD, timeout=60, on_exit=lambda: None)

        pause = median_ms(frozen, args.reps)
        one = pause + median_ms(lookups, args.reps)
        # The same exec alternately without and with the exit watch (same container, same load).
        plain_t, watched_t = [], []
        for _ in range(args.reps):
            for fn, out in ((plain_run, plain_t), (watched_run, watched_t)):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
        plain, watch = statistics.median(plain_t) * 1000, statistics.median(watched_t) * 1000 - statistics.median(
            plain_t) * 1000
        # RunEnd: its inspect before the run, its freeze/list/kill/thaw after (two processes left).
        ends = []
        for _ in range(args.reps):
            engine.run_exec(verifier, ["/bin/bash", "-c", "sleep 100 & sleep 100 & disown -a; exit 0"], timeout=60)
            t0 = time.perf_counter()
            end = snapshot.RunEnd(verifier)
            end()
            ends.append(time.perf_counter() - t0)
            assert len(end.survivors or []) == 2, end.survivors
            api.wait(verifier, timeout=30)
            api.start(verifier)
        two = watch + statistics.median(ends) * 1000
        four = median_ms(lambda: probe_start(verifier, "/tmp", None), args.reps)
        print("| invariant | added per sample (median ms) |")
        print("|---|---|")
        print(f"| 1 agent frozen (pause + unpause {pause:.1f}, which the deliverables capture paid already; peers and "
              f"ports {one - pause:.1f}) | {one:.1f} |")
        print(f"| 2 run ends at test.sh's exit (exit watch {watch:+.1f}, RunEnd {two - watch:.1f}; the test exec "
              f"alone {plain:.1f}) | {two:.1f} |")
        print(f"| 4 pristine start probe (engine stats) | {four:.1f} |")
        print(f"| total | {one + two + four:.1f} |")
    finally:
        for c in (agent, verifier):
            engine.remove_container(c)


if __name__ == "__main__":
    main()
