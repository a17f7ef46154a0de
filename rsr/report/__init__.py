"""Evaluation reports and leaderboards built from Inspect `.eval` logs."""

from rsr.report.logs import RunLog, SampleRecord, read_run, read_runs
from rsr.report.metrics import (
    SuiteMetrics,
    TaskOutcome,
    mean_stderr,
    pass_at_k,
    pass_hat_k,
    suite_metrics,
)

__all__ = [
    "RunLog",
    "SampleRecord",
    "SuiteMetrics",
    "TaskOutcome",
    "mean_stderr",
    "pass_at_k",
    "pass_hat_k",
    "read_run",
    "read_runs",
    "suite_metrics",
]
