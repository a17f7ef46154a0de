"""Read Inspect `.eval` logs of rsr suites into typed per-sample records.

One `RunLog` per log file: the header facts reports and leaderboards need (task, model,
epochs, status, overrides) and one `SampleRecord` per (task, epoch) found in the file. Score
values come from the `rsr/verifier` scorer: `{"passed": 0|1, "reward": r, "process": p}`.
A sample that errored, or that has no verifier score, is a failure and is flagged as such; a
sample the infrastructure failed (its score's `metadata.infra`, rsr.sandbox.infra) is a scored
failure that also carries the kind of its infrastructure error.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from rsr.errors import RsrError
from rsr.report.metrics import SuiteMetrics, TaskOutcome, suite_metrics
from rsr.sandbox.infra import INFRA_KEY

__all__ = [
    "LIGHT_FIELDS",
    "RunLog",
    "SampleRecord",
    "benchmark_of",
    "find_logs",
    "read_run",
    "read_runs",
    "score_fields",
]

SCORER = "verifier"
# Sample fields a report never needs; skipping them keeps reading a 500-sample log cheap.
LIGHT_FIELDS = {"events", "messages", "attachments", "store", "events_data", "timelines"}


def benchmark_of(task: str) -> str:
    """`rsr/core` -> `core`; a task without a namespace is its own benchmark."""
    return task.rsplit("/", 1)[-1]


def score_fields(value: Any) -> tuple[bool, float, float] | None:
    """(passed, reward, process) from a verifier score value; None if it is not one."""
    if not isinstance(value, dict) or "passed" not in value:
        return None
    try:
        passed = float(value["passed"]) >= 1.0
        reward = float(value.get("reward", value["passed"]))
        process = float(value.get("process", value["passed"]))
    except (TypeError, ValueError):
        return None
    return passed, reward, process


class SampleRecord(BaseModel):
    """One run of one task, as the log recorded it."""

    model_config = ConfigDict(extra="forbid")

    task_name: str
    sample_id: str
    epoch: int
    task_digest: str | None = None
    scored: bool = Field(description="the verifier produced a score")
    passed: bool
    reward: float
    process: float
    error: str | None = Field(default=None, description="Inspect sample error, if any")
    verifier_error: str | None = None
    limit: str | None = Field(default=None, description="limit the agent hit (time, tokens...)")
    infra: str | None = Field(default=None, description="kind of the infrastructure error that ended the "
                              "sample (build, pull, sandbox, verifier), if any")
    infra_message: str | None = None
    attempts: int = Field(default=1, description="attempts the run took (retries after an error)")

    @property
    def failed_to_run(self) -> bool:
        """Errored or unscored: a failure that says nothing about the agent's ability."""
        return self.error is not None or not self.scored

    @property
    def error_kind(self) -> str | None:
        """What kind of error the run ended with: the Inspect error's exception type,
        'unscored', or None for a run that ended scored."""
        if self.error is not None:
            found = _ERROR_TYPE.match(self.error)
            return found.group(1) if found else "error"
        return None if self.scored else "unscored"


_ERROR_TYPE = re.compile(r"^\s*([A-Za-z_][\w.]*)(?:\(|:)")


class RunLog(BaseModel):
    """One `.eval` file: one suite (Inspect task) run by one model, n epochs."""

    model_config = ConfigDict(extra="forbid")

    path: Path
    task: str = Field(description="Inspect task name, e.g. rsr/core")
    benchmark: str
    status: str
    model: str
    solver: str | None
    epochs: int
    created: str
    eval_id: str
    run_id: str
    task_args: dict[str, Any]
    dataset_ids: list[str] = Field(description="sample ids the log says it ran")
    metadata: dict[str, Any] = Field(default_factory=dict)
    samples: list[SampleRecord]

    def by_task(self) -> dict[str, dict[int, SampleRecord]]:
        out: dict[str, dict[int, SampleRecord]] = defaultdict(dict)
        for s in self.samples:
            out[s.task_name][s.epoch] = s
        return dict(out)

    def task_names(self) -> list[str]:
        """Every task of the run: those with samples and those the header lists."""
        names = {s.task_name for s in self.samples} | set(self.dataset_ids)
        return sorted(names)

    def outcomes(self) -> list[TaskOutcome]:
        """Per-task outcomes over `epochs` runs; missing and errored runs are failures."""
        grouped = self.by_task()
        return [
            TaskOutcome.from_runs(
                name,
                {
                    e: (s.passed, s.process, s.failed_to_run, s.infra, s.error_kind, s.attempts)
                    for e, s in grouped.get(name, {}).items()
                },
                self.epochs,
            )
            for name in self.task_names()
        ]

    def metrics(self, k: int = 3) -> SuiteMetrics:
        return suite_metrics(self.outcomes(), k=k)

    def not_run(self) -> list[dict[str, Any]]:
        """Tasks the run selected but could not run here (one that needs a GPU on a machine
        without one), as the task metadata lists them: not in the metrics, counted apart."""
        items = self.metadata.get("not_run") or []
        return [i for i in items if isinstance(i, dict)]

    def not_run_summary(self) -> str:
        """`4 not run: needs a GPU`, or "" when every selected task ran."""
        counts: dict[str, int] = {}
        for item in self.not_run():
            reason = str(item.get("reason") or "not run")
            counts[reason] = counts.get(reason, 0) + 1
        return "; ".join(f"{n} not run: {reason}" for reason, n in counts.items())

    def viewer_link(self, sample: SampleRecord) -> str:
        """Fragment that opens the sample in `inspect view --log-dir <this log's folder>`."""
        return (
            f"#/logs/{quote(self.path.name)}/samples/sample/"
            f"{quote(sample.sample_id)}/{sample.epoch}/"
        )


def _record(sample: Any) -> SampleRecord:
    meta = sample.metadata or {}
    score = (sample.scores or {}).get(SCORER)
    fields = score_fields(score.value) if score is not None else None
    verifier_error = infra = infra_message = None
    if score is not None and isinstance(score.metadata, dict):
        verifier_error = score.metadata.get("error")
        found = score.metadata.get(INFRA_KEY)
        if isinstance(found, dict):
            infra = str(found.get("kind") or "unknown")
            infra_message = str(found.get("message") or "")
    passed, reward, process = fields if fields is not None else (False, 0.0, 0.0)
    return SampleRecord(
        task_name=str(meta.get("task_name") or sample.id),
        sample_id=str(sample.id),
        epoch=int(sample.epoch),
        task_digest=meta.get("task_digest"),
        scored=fields is not None,
        passed=passed,
        reward=reward,
        process=process,
        error=sample.error.message if sample.error is not None else None,
        verifier_error=verifier_error,
        limit=sample.limit.type if sample.limit is not None else None,
        infra=infra if fields is not None else None,
        infra_message=infra_message if fields is not None else None,
        attempts=len(getattr(sample, "error_retries", None) or []) + 1,
    )


def read_run(path: str | Path) -> RunLog:
    """Read one `.eval` log (samples without their transcripts)."""
    from inspect_ai.log import read_eval_log

    path = Path(path)
    try:
        log = read_eval_log(str(path), exclude_fields=LIGHT_FIELDS)
    except FileNotFoundError as e:
        raise RsrError(f"{path}: log file not found") from e
    except Exception as e:  # a truncated or foreign zip: say which file
        raise RsrError(f"{path}: not a readable Inspect log ({type(e).__name__}: {e})") from e
    return run_from_log(log, path)


def run_from_log(log: Any, path: Path) -> RunLog:
    spec = log.eval
    return RunLog(
        path=path,
        task=spec.task,
        benchmark=benchmark_of(spec.task),
        status=log.status,
        model=spec.model,
        solver=spec.solver,
        epochs=spec.config.epochs or 1,
        created=str(spec.created),
        eval_id=spec.eval_id,
        run_id=spec.run_id,
        task_args=dict(spec.task_args or {}),
        dataset_ids=[str(i) for i in (spec.dataset.sample_ids or [])],
        metadata=dict(spec.metadata or {}),
        samples=[_record(s) for s in (log.samples or [])],
    )


def find_logs(paths: Iterable[str | Path]) -> list[Path]:
    """`.eval` files named directly or found (recursively) in the given folders."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.rglob("*.eval")))
        elif p.is_file() and p.suffix == ".eval":
            out.append(p)
        elif p.exists():
            raise RsrError(f"{p}: not an Inspect .eval log")
        else:
            raise RsrError(f"{p}: no such file or folder")
    return out


def readable_logs(paths: Iterable[str | Path]) -> list[Path]:
    """find_logs, with each log's header read first: a truncated, foreign or unreadable `.eval`
    is one line naming the file before any command starts its work on the others."""
    files = find_logs(paths)
    if not files:
        raise RsrError("no .eval logs found in " + ", ".join(map(str, paths))
                       + " (name .eval files, or folders an `rsr eval` or `inspect eval` run wrote)")
    check_headers(files)
    return files


def check_headers(files: Iterable[Path]) -> None:
    from inspect_ai.log import read_eval_log

    for path in files:
        try:
            read_eval_log(str(path), header_only=True)
        except Exception as e:  # a truncated or foreign zip: say which file
            raise RsrError(f"{path}: not a readable Inspect log ({type(e).__name__}: {e}); "
                           "move it out of the way or name the other logs") from None


def superseded(files: list[Path]) -> dict[Path, str]:
    """Logs a later run replaced: an unfinished log (a killed run's `started`, a `cancelled` or
    `error` one) beside a successful log of the same suite in the same folder, which is what a
    resumed `rsr eval` leaves. Each with why, as `rsr report table5` says it."""
    from inspect_ai.log import read_eval_log

    heads = {}
    for path in files:
        head = read_eval_log(str(path), header_only=True)
        heads[path] = (path.parent, benchmark_of(head.eval.task), head.status)
    done = {(folder, bench): path for path, (folder, bench, status) in heads.items() if status == "success"}
    return {path: f"{bench}: using {done[(folder, bench)].name} (success); skipped {path.name} ({status})"
            for path, (folder, bench, status) in heads.items()
            if status != "success" and (folder, bench) in done}


def read_runs(folder: str | Path) -> tuple[dict[str, RunLog], list[str]]:
    """The latest run of each benchmark in a log folder, and notes on what was skipped.

    `eval_set` leaves one log per suite once it succeeds; several logs of one suite mean
    retries or repeated runs, and the newest finished one is the result.
    """
    runs: dict[str, list[RunLog]] = defaultdict(list)
    for path in find_logs([folder]):
        run = read_run(path)
        runs[run.benchmark].append(run)
    chosen: dict[str, RunLog] = {}
    notes: list[str] = []
    for bench, candidates in runs.items():
        candidates.sort(key=lambda r: (r.status == "success", r.created))
        chosen[bench] = candidates[-1]
        for skipped in candidates[:-1]:
            notes.append(
                f"{bench}: using {chosen[bench].path.name} ({chosen[bench].status}); "
                f"skipped {skipped.path.name} ({skipped.status}, {skipped.created})"
            )
    return chosen, notes
