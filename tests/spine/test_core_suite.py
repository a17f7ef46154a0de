"""Every core task through the quality gate in real sandboxes: the oracle passes on every one of
3 runs, the null agent and a partial oracle fail, tests and solution stay hidden, network off."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rsr.suites.check import check_tasks
from rsr.suites.registry import REPO_ROOT
from rsr.tasks.load import load_dataset

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_core_suite_passes_the_quality_gate(tmp_path: Path) -> None:
    runs = int(os.environ.get("RSR_CORE_ORACLE_RUNS", "3"))
    reports = check_tasks("core", runs=runs, log_dir=str(tmp_path / "logs"))
    out = REPO_ROOT / "logs" / "core-check.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps([r.to_dict() for r in reports], indent=2))
    findings = {r.name: r.findings for r in reports if r.findings}
    assert not findings, json.dumps(findings, indent=2)
    assert len(reports) == len(load_dataset(REPO_ROOT / "tasks/core").tasks)
    for r in reports:
        assert len(r.oracle_passes) == runs and all(r.oracle_passes)
        assert r.null_passed is False
