"""The verdict on a suite's health from one oracle run and one null-agent run of it.

A healthy suite: the reference solution (rsr/oracle) passes every sample and doing nothing
(rsr/null) passes none. Anything else names the tasks at fault: those the oracle fails (or
whose sample errored: an infrastructure failure is no pass), and those the null agent passes
(tests that do not check the end state).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rsr.errors import RsrError
from rsr.report.logs import RunLog, find_logs, read_run

__all__ = ["AgentTally", "SuiteVerdict", "latest_run", "suite_verdict"]


class AgentTally(BaseModel):
    """How one agent's run went: samples passed of samples expected, and the exceptions."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    passed: int
    total: int
    passed_tasks: list[str]
    failed_tasks: list[str]
    errored_tasks: list[str]

    @classmethod
    def of(cls, agent: str, run: RunLog) -> AgentTally:
        expected = len(run.task_names()) * run.epochs
        passed = [s for s in run.samples if s.passed]
        return cls(agent=agent, passed=len(passed), total=max(expected, len(run.samples)),
                   passed_tasks=sorted({s.task_name for s in passed}),
                   failed_tasks=sorted({s.task_name for s in run.samples if not s.passed}
                                       | (set(run.task_names()) - {s.task_name for s in run.samples})),
                   errored_tasks=sorted({s.task_name for s in run.samples if s.failed_to_run}))


class SuiteVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    oracle: AgentTally
    null: AgentTally

    @property
    def healthy(self) -> bool:
        return (self.oracle.total > 0 and self.oracle.passed == self.oracle.total
                and self.null.passed == 0)

    def problems(self) -> list[str]:
        out = []
        if self.oracle.total == 0:
            out.append("the oracle run has no samples")
        if self.oracle.failed_tasks:
            errored = set(self.oracle.errored_tasks)
            failed = [t for t in self.oracle.failed_tasks if t not in errored]
            if failed:
                out.append(f"the oracle fails {', '.join(failed)}")
            if errored:
                out.append(f"the oracle's samples errored (not run to a score) on {', '.join(sorted(errored))}")
        if self.null.passed_tasks:
            out.append(f"the null agent passes {', '.join(self.null.passed_tasks)} (tests that do not "
                       "check the end state)")
        return out

    def line(self) -> str:
        counts = (f"oracle {self.oracle.passed}/{self.oracle.total} passed, "
                  f"null {self.null.passed}/{self.null.total} passed")
        if self.healthy:
            return f"verdict: {counts}: the suite is healthy"
        return f"verdict: {counts}: NOT healthy: {'; '.join(self.problems())}"


def latest_run(folder: str | Path, agent: str) -> RunLog:
    """The newest `.eval` log in folder (one run writes one log per suite)."""
    logs = find_logs([folder]) if Path(folder).exists() else []
    if not logs:
        raise RsrError(f"{folder}: no .eval log of the {agent} run (did it start?)")
    return read_run(max(logs, key=lambda p: p.stat().st_mtime))


def suite_verdict(oracle_dir: str | Path, null_dir: str | Path) -> SuiteVerdict:
    return SuiteVerdict(oracle=AgentTally.of("oracle", latest_run(oracle_dir, "oracle")),
                        null=AgentTally.of("null", latest_run(null_dir, "null")))
