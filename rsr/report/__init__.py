"""Evaluation reports and leaderboards built from Inspect `.eval` logs.

- `metrics`: pass@k, pass^k, mean with standard error, process reward.
- `logs`: `.eval` files as typed per-sample records (`RunLog`, `SampleRecord`).
- `table5`: the paper's Table 5 from labelled log folders (Markdown, CSV, PNG).
- `evalset`: eval-set specs in `evals/*.yaml`, run and resumed through `eval_set`;
  `runguard`: the run's log-directory lock and its clean-up after a signal.
- `verdict`: a suite's health from an oracle run and a null-agent run, in one line.
- `leaderboard`: validated entries; `site`: the static page; `tbexport`: TB2 submissions.
"""

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
