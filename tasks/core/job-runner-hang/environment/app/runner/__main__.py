"""Run the jobs of a file on a pool of worker threads.

usage: python3 -m runner JOBS.txt [--workers N]

Every non-blank line of JOBS.txt is one job ("NAME ARG ..."; see runner/jobs.py). Prints one line
per job, in input order (numbered by position among the non-blank lines, from 1):
    "<n>: <result>"  or  "<n>: FAILED (<ExceptionType>)"
then "ok=<count> failed=<count>". Exit status 0 if every job succeeded, 3 otherwise.
"""
import argparse
import queue
import sys
import threading

from .jobs import run


def worker(tasks, results, lock):
    while True:
        item = tasks.get()
        if item is None:
            tasks.task_done()
            return
        n, line = item
        try:
            value = run(line)
        except Exception as e:  # noqa: BLE001
            with lock:
                results.append((str(n), f"FAILED ({type(e).__name__})"))
            continue
        with lock:
            results.append((str(n), str(value)))
        tasks.task_done()


def main(argv=None):
    p = argparse.ArgumentParser(prog="runner")
    p.add_argument("jobs")
    p.add_argument("--workers", type=int, default=4)
    args = p.parse_args(argv)
    with open(args.jobs) as f:
        lines = [line.strip() for line in f if line.strip()]
    tasks = queue.Queue()
    results = []
    lock = threading.Lock()
    threads = [threading.Thread(target=worker, args=(tasks, results, lock)) for _ in range(args.workers)]
    for t in threads:
        t.start()
    for n, line in enumerate(lines, 1):
        tasks.put((n, line))
    tasks.put(None)
    tasks.join()
    failed = 0
    for n, text in sorted(results):
        print(f"{n}: {text}")
        failed += text.startswith("FAILED")
    print(f"ok={len(results) - failed} failed={failed}")
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
