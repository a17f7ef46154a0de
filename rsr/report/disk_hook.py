"""`inspect eval rsr/...` on a disk that filled: one line and a non-zero exit, not silence.

Inspect records a task whose log could not be written as an errored log, logs the error, and
`inspect eval` still exits 0 (per-task outcomes live in the logs); with `--display none` it
prints nothing at all. For rsr's tasks, a run whose logs could not be written because the disk
filled ends with one line naming the log directory's free space, and exit 1, so a script or a
batch system sees it. Under `rsr eval run` the eval-set runner says so itself (rsr.report.evalset).
"""

from __future__ import annotations

import contextvars
import sys
from pathlib import Path

from inspect_ai.hooks import Hooks, RunEnd, hooks

UNDER_RSR_RUN: contextvars.ContextVar[bool] = contextvars.ContextVar("rsr_under_eval_set", default=False)
NO_SPACE = ("No space left on device", "Disk quota exceeded", "[Errno 28]", "OSError(28,")


def _full(log: object) -> bool:
    error = getattr(log, "error", None)
    task = str(getattr(getattr(log, "eval", None), "task", "") or "")
    message = str(getattr(error, "message", "") or "")
    return getattr(log, "status", None) == "error" and task.startswith("rsr/") and any(n in message for n in NO_SPACE)


@hooks(name="rsr_disk_full", description="exit 1 when the disk fills")
class DiskFullHook(Hooks):
    async def on_run_end(self, data: RunEnd) -> None:
        if UNDER_RSR_RUN.get():
            return
        full = [log for log in data.logs if _full(log)]
        if not full:
            return
        from rsr.sandbox.disk import space

        where = {str(Path(str(log.location)).parent) for log in full if log.location}
        figures = "; ".join(f"{w}: {s.free_mb} MB free" for w in sorted(where) if (s := space("log dir", Path(w))))
        print(f"rsr: the disk filled, so no log was written for {', '.join(sorted({log.eval.task for log in full}))}"
              f" ({figures or 'log directory unknown'}); free some space and run the same command again",
              file=sys.stderr, flush=True)
        raise SystemExit(1)
