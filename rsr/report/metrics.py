"""Scoring arithmetic for repeated runs: pass@k, pass^k, mean pass rate with standard error,
process reward.

Every function works on per-task outcome lists, one entry per run (epoch) of the task, so that
the same numbers come out whether the runs were read from one `.eval` log with `epochs=3` or
gathered from several logs. A run that errored, hit a limit or is missing from the log is a
failure (passed 0, process 0): leaving it out would inflate the score of exactly the runs that
went worst.

Infrastructure errors (the sandbox or the verifier could not be provided: rsr.sandbox.infra)
are failures in every headline number too, and are also counted by kind, with a second,
labelled pass rate over the runs without one (`mean_excl_infra`), as some leaderboards publish.
Inspect errors (a model API failure, a crash) and unscored runs stay failures in both.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SuiteMetrics",
    "TaskOutcome",
    "headline",
    "mean_stderr",
    "pass_at_k",
    "pass_hat_k",
    "suite_metrics",
]


def _check_counts(n: int, c: int, k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if n < k:
        raise ValueError(f"pass@{k} needs at least {k} runs per task, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must lie in [0, n={n}]")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator of the probability that at least one of k runs passes.

    Chen et al. (2021): 1 - C(n-c, k) / C(n, k) for n runs of which c passed. Computed as a
    running product, which stays exact-enough for large n where the binomials overflow floats.
    """
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    fail_all = 1.0
    for i in range(n - c + 1, n + 1):
        fail_all *= 1.0 - k / i
    return 1.0 - fail_all


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator of the probability that all of k runs pass (pass^k, reliability)."""
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def mean_stderr(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (sample standard deviation, ddof=1).

    The standard error of a single value is 0 rather than undefined: a one-task suite has a
    mean but no spread to report.
    """
    if not values:
        raise ValueError("mean of an empty sequence")
    n = len(values)
    mean = math.fsum(values) / n
    if n == 1:
        return mean, 0.0
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


class TaskOutcome(BaseModel):
    """All runs of one task: `passed[i]` and `process[i]` belong to run i (epoch i+1)."""

    model_config = ConfigDict(extra="forbid")

    task: str
    passed: list[bool]
    process: list[float]
    errors: int = Field(default=0, description="runs that errored (already counted as failures)")
    missing: int = Field(default=0, description="runs absent from the log (counted as failures)")
    infra: list[str | None] = Field(
        default_factory=list,
        description="per run: the kind of its infrastructure error, else None (empty: none had one)")
    error_kinds: list[str] = Field(
        default_factory=list, description="the kind of each errored run (the Inspect error's type, or 'unscored')")
    retried: int = Field(default=0, description="runs that took more than one attempt (Inspect's "
                         "retry_on_error retried an infrastructure failure; the log keeps each attempt)")

    @property
    def n(self) -> int:
        return len(self.passed)

    @property
    def c(self) -> int:
        return sum(self.passed)

    @classmethod
    def from_runs(
        cls,
        task: str,
        runs: Mapping[int, tuple[Any, ...]],
        epochs: int,
    ) -> TaskOutcome:
        """Build from `{epoch: (passed, process, errored[, infra kind, error kind])}`, filling
        absent epochs as failures. An infrastructure error's run is scored (a failure), not errored."""
        passed: list[bool] = []
        process: list[float] = []
        infra: list[str | None] = []
        error_kinds: list[str] = []
        errors = missing = retried = 0
        for epoch in range(1, epochs + 1):
            if epoch not in runs:
                missing += 1
                passed.append(False)
                process.append(0.0)
                infra.append(None)
                continue
            ok, proc, errored, *kinds = runs[epoch]
            infra_kind, error_kind, attempts = (list(kinds) + [None, None, 1])[:3]
            retried += int((attempts or 1) > 1)
            # A run the scorer classified as infrastructure is counted there, not twice.
            errored = bool(errored) and infra_kind is None
            errors += int(errored)
            if errored:
                error_kinds.append(error_kind or "error")
            passed.append(bool(ok) and not errored and infra_kind is None)
            process.append(0.0 if errored or infra_kind is not None else float(proc))
            infra.append(infra_kind)
        return cls(task=task, passed=passed, process=process, errors=errors, missing=missing,
                   infra=infra if any(k is not None for k in infra) else [], error_kinds=error_kinds,
                   retried=retried)


class SuiteMetrics(BaseModel):
    """Aggregate scores of one suite in one labelled run. Rates are fractions in [0, 1]."""

    model_config = ConfigDict(extra="forbid")

    n_tasks: int
    n_runs: int = Field(description="runs (epochs) per task")
    k: int = Field(description="the k of pass_at_k and pass_hat_k")
    pass_at_k: float | None = Field(description="None when n_runs < k")
    pass_hat_k: float | None
    mean: float = Field(description="mean pass rate over all task runs")
    stderr: float = Field(description="standard error of `mean` over tasks")
    run_means: list[float] = Field(description="pass rate of each run (epoch) over all tasks")
    process: float = Field(description="mean process reward over all task runs")
    process_stderr: float
    solved: int = Field(description="tasks passed in at least one run")
    n_errors: int
    n_missing: int
    n_infra: int = Field(default=0, description="runs ended by an infrastructure error (failures in every "
                         "rate above)")
    infra_by_kind: dict[str, int] = Field(default_factory=dict, description="n_infra by kind (build, pull, "
                                          "sandbox, verifier)")
    errors_by_kind: dict[str, int] = Field(default_factory=dict, description="n_errors by kind (the Inspect "
                                           "error's type, or 'unscored')")
    mean_excl_infra: float | None = Field(default=None, description="pass rate over the runs without an "
                                          "infrastructure error; None when every run had one")
    n_retried: int = Field(default=0, description="runs that took more than one attempt (an infrastructure "
                           "failure retried; each attempt is in the log)")


def suite_metrics(outcomes: Iterable[TaskOutcome], k: int = 3) -> SuiteMetrics:
    """Aggregate per-task outcomes. Every task must have the same number of runs.

    `stderr` is the standard error over tasks of each task's mean pass rate: tasks are the
    sampling unit, runs of one task are correlated. This is what Inspect's `stderr()` metric
    reports after a `mean` epoch reducer, so the two agree.
    """
    tasks = list(outcomes)
    if not tasks:
        raise ValueError("no tasks to aggregate")
    runs = {t.n for t in tasks}
    if len(runs) != 1:
        raise ValueError(f"tasks have differing run counts {sorted(runs)}; fill missing runs first")
    n = runs.pop()
    if n == 0:
        raise ValueError("tasks have no runs")
    per_task = [t.c / n for t in tasks]
    mean, se = mean_stderr(per_task)
    proc_task = [math.fsum(t.process) / n for t in tasks]
    proc, proc_se = mean_stderr(proc_task)
    at_k = hat_k = None
    if n >= k:
        at_k = math.fsum(pass_at_k(n, t.c, k) for t in tasks) / len(tasks)
        hat_k = math.fsum(pass_hat_k(n, t.c, k) for t in tasks) / len(tasks)
    run_means = [sum(t.passed[i] for t in tasks) / len(tasks) for i in range(n)]
    infra_kinds = Counter(k for t in tasks for k in t.infra if k is not None)
    kept = [ok for t in tasks for ok, k in zip(t.passed, t.infra or [None] * t.n, strict=True) if k is None]
    return SuiteMetrics(
        n_tasks=len(tasks),
        n_runs=n,
        k=k,
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        mean=mean,
        stderr=se,
        run_means=run_means,
        process=proc,
        process_stderr=proc_se,
        solved=sum(1 for t in tasks if t.c > 0),
        n_errors=sum(t.errors for t in tasks),
        n_missing=sum(t.missing for t in tasks),
        n_infra=sum(infra_kinds.values()),
        infra_by_kind=dict(sorted(infra_kinds.items())),
        errors_by_kind=dict(sorted(Counter(k for t in tasks for k in t.error_kinds).items())),
        mean_excl_infra=sum(kept) / len(kept) if kept else None,
        n_retried=sum(t.retried for t in tasks),
    )


def _kinds(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in counts.items())


def _runs(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")


def headline(m: SuiteMetrics) -> str:
    """The two numbers every report prints: the headline pass rate over every run (errors and
    infrastructure errors are failures) and, labelled, the rate over runs without an
    infrastructure error; with the counts behind them."""
    total = m.n_tasks * m.n_runs
    parts = [f"passed {100 * m.mean:.1f}% of {_runs(total)}"]
    if m.n_infra:
        parts.append(f"infra errors {m.n_infra} ({_kinds(m.infra_by_kind)})")
    if m.n_errors:
        parts.append(f"errored {m.n_errors} ({_kinds(m.errors_by_kind) or 'error ' + str(m.n_errors)})")
    if m.n_missing:
        parts.append(f"missing {m.n_missing}")
    if m.n_retried:
        parts.append(f"retried {m.n_retried} (after an infra failure)")
    kept = total - m.n_infra
    excl = "n/a" if m.mean_excl_infra is None else f"{100 * m.mean_excl_infra:.1f}%"
    parts.append(f"excluding infra errors: passed {excl} of {_runs(kept)}")
    return "; ".join(parts)
