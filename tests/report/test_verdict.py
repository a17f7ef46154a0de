"""`rsr report verdict`: one line on a suite's health from an oracle run and a null-agent run
(the session's real core runs: conftest's oracle, null and scripted logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsr.cli.main import main

pytestmark = [pytest.mark.docker]


def _verdict(oracle: Path, null: Path, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    rc = main(["report", "verdict", "--oracle", str(oracle), "--null", str(null)])
    return rc, capsys.readouterr().out.strip()


def test_report_verdict_does_call_a_suite_healthy_when_the_oracle_passes_all_and_null_none(
        core_runs, capsys: pytest.CaptureFixture) -> None:
    rc, out = _verdict(core_runs["oracle"], core_runs["null"], capsys)
    assert (rc, out) == (0, "verdict: oracle 6/6 passed, null 0/6 passed: the suite is healthy")


def test_report_verdict_rejects_a_suite_naming_what_the_oracle_fails_and_the_null_agent_passes(
        core_runs, capsys: pytest.CaptureFixture) -> None:
    rc, out = _verdict(core_runs["null"], core_runs["oracle"], capsys)
    assert rc == 1
    assert out == ("verdict: oracle 0/6 passed, null 6/6 passed: NOT healthy: the oracle fails "
                   "hello-world, semver-sort; the null agent passes hello-world, semver-sort (tests "
                   "that do not check the end state)")


def test_report_verdict_does_count_errored_samples_as_not_passed_and_say_so(
        core_runs, capsys: pytest.CaptureFixture) -> None:
    # The scripted run solves hello-world; its model "API" fails on every semver-sort sample.
    rc, out = _verdict(core_runs["scripted"], core_runs["null"], capsys)
    assert rc == 1
    assert out == ("verdict: oracle 3/6 passed, null 0/6 passed: NOT healthy: the oracle's samples "
                   "errored (not run to a score) on semver-sort")


def test_report_verdict_rejects_a_folder_without_a_log_in_one_line(
        core_runs, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(["report", "verdict", "--oracle", str(tmp_path / "never-ran"), "--null", str(core_runs["null"])])
    out = " ".join(capsys.readouterr().err.split())
    assert rc == 2
    assert out == f"error: verdict: none: {tmp_path / 'never-ran'}: no .eval log of the oracle run (did it start?)"
