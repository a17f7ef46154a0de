"""Suite registry: pinned sources, local copies, and a clear error when a suite is not here."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskfactory import harbor_task

from rsr.errors import RsrError
from rsr.suites.inspect_tasks import tb2, tbh
from rsr.suites.registry import SUITES, resolve_suite_path

EXTERNAL = ["tb2", "tb2_1", "tb3", "tb4", "tbh", "swr100", "lhtb"]


def test_suites_registry_lists_every_paper_suite_with_a_source_or_note() -> None:
    for name in EXTERNAL:
        spec = SUITES[name]
        assert spec.n_tasks and (spec.git_url or spec.harbor_ref or spec.note)


def test_resolve_suite_path_explains_how_to_provide_a_missing_suite(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RSR_TASKS_HOME", str(tmp_path / "cache"))
    with pytest.raises(RsrError, match=r"-T path=.*RSR_TASKS_HOME"):
        resolve_suite_path("tbh")
    with pytest.raises(RsrError, match="unknown suite"):
        resolve_suite_path("nope")


def test_external_suite_loads_from_a_local_path_and_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harbor_task(tmp_path / "copy", "t1")
    harbor_task(tmp_path / "copy", "t2")
    task = tb2(path=str(tmp_path / "copy"), tasks="t2", unpinned=True)
    assert [s.id for s in task.dataset] == ["t2"]
    assert task.dataset[0].metadata["suite"] == "tb2"
    assert task.metadata["unpinned"] is True and task.metadata["pin_status"] == "unpinned"
    monkeypatch.setenv("RSR_TASKS_HOME", str(tmp_path / "home"))
    harbor_task(tmp_path / "home" / "tbh", "cached-task")
    assert [s.id for s in tbh().dataset] == ["cached-task"]


def test_sample_metadata_carries_what_harnesses_and_reports_need(tmp_path: Path) -> None:
    harbor_task(tmp_path, "meta")
    sample = tbh(path=str(tmp_path)).dataset[0]
    for key in ("task_dir", "task_name", "suite", "task_digest", "agent_timeout_sec", "allow_internet", "workdir"):
        assert key in sample.metadata
    assert sample.metadata["task_digest"].startswith("sha256:")
