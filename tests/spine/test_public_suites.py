"""Public suites fetched through Harbor's own downloader (the installed `harbor` CLI, 0.26),
from a stand-in for the hub: a git repository laid out as a Harbor git-repo registry, served by
`git daemon` on loopback (Harbor's `--repo` takes git URLs only). No Docker here: the run of a
fetched suite in real sandboxes is tests/spine/test_rehearsal.py."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from harbor_ref import harbor_home

from rsr.errors import RsrError
from rsr.suites.standin import build_registry_repo, publish, serve_git

REPO = Path(__file__).resolve().parents[2]
TASKS = sorted(p for p in (REPO / "examples" / "rehearsal" / "tasks").iterdir() if (p / "task.toml").is_file())



@pytest.fixture(scope="module", autouse=True)
def harbor() -> Iterator[Path]:
    """Harbor 0.26's CLI (installed on first use by tests/harbor_ref.py), as rsr finds it."""
    exe = harbor_home() / "bin" / "harbor"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RSR_HARBOR", str(exe))
        yield exe


@pytest.fixture(scope="module")
def served(harbor: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """(served root, base git:// URL): one git daemon for the module; tests publish into it."""
    root = tmp_path_factory.mktemp("served")
    with serve_git(root) as base:
        yield root, base


def _standin(served: tuple[Path, str], tmp: Path, name: str, version: str = "4.0.0",
             dataset: str = "terminal-bench") -> tuple[Path, str]:
    root, base = served
    work = build_registry_repo(tmp / name, dataset, version, TASKS)
    publish(work, root, "standin", name)
    return work, f"{base}/standin/{name}.git"


@pytest.fixture(scope="module")
def fetched(served: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """tb4 fetched once with `rsr tasks fetch tb4 --source URL`: (cache root, source, output)."""
    from rsr.cli.main import main

    tmp = tmp_path_factory.mktemp("fetch")
    _, url = _standin(served, tmp, "tb4")
    home = tmp / "home"
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(buf):
        mp.setenv("RSR_TASKS_HOME", str(home))
        mp.setenv("COLUMNS", "300")
        rc = main(["tasks", "fetch", "tb4", "--source", url])
    assert rc == 0, buf.getvalue()
    return home, url, buf.getvalue()


def test_tasks_fetch_does_download_a_hub_suite_with_harbor_and_record_tool_source_ref_and_digests(
        fetched: tuple[Path, str, str], harbor: Path) -> None:
    from rsr.suites.registry import PIN_RECORD, suite_digest
    from rsr.tasks.load import load_task

    home, url, out = fetched
    copy = home / "tb4"
    assert sorted(p.name for p in copy.iterdir() if p.is_dir()) == [t.name for t in TASKS]
    record = json.loads((copy / PIN_RECORD).read_text())
    version = subprocess.run([str(harbor), "--version"], capture_output=True, text=True).stdout.strip()
    assert record["tool"] == f"harbor {version}"
    assert record["source"] == url and record["ref"] == "4.0.0"
    assert record["command"][:3] == ["harbor", "download", "terminal-bench@4.0.0"]
    assert record["command"][3:] == ["--repo", url]
    # The digests are those of what Harbor wrote, task by task and for the set.
    assert record["tasks"] == {t.name: load_task(copy / t.name).digest for t in TASKS}
    assert record["digest"] == suite_digest(copy)
    assert "1 needs a GPU: list-gpus" in out and record["digest"] in out.replace("\n", "")


def test_suite_task_does_leave_out_gpu_tasks_without_a_gpu_and_list_them_as_not_run(
        fetched: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.suites.inspect_tasks import suite_task

    home, url, _ = fetched
    monkeypatch.setenv("RSR_TASKS_HOME", str(home))
    monkeypatch.setenv("RSR_HAS_GPU", "0")
    task = suite_task("tb4", None, None, None)
    assert sorted(s.id for s in task.dataset) == ["count-users", "write-greeting"]
    meta = task.metadata or {}
    assert [(n["task"], n["reason"], n["gpus"]) for n in meta["not_run"]] == [("list-gpus", "needs a GPU", 1)]
    assert meta["gpu_check"] == "RSR_HAS_GPU=0"
    # The log carries how the copy was fetched and what it was pinned to.
    assert meta["pin_status"] == "pinned" and meta["pin_ref"] == "4.0.0" and meta["pin_source"] == url
    assert meta["pin_tool"].startswith("harbor ")
    assert sorted(meta["pinned_task_digests"]) == [t.name for t in TASKS]

    monkeypatch.setenv("RSR_HAS_GPU", "1")
    task = suite_task("tb4", None, None, None)
    assert sorted(s.id for s in task.dataset) == [t.name for t in TASKS] and task.metadata["not_run"] == []


def test_suite_task_rejects_a_selection_whose_every_task_needs_a_missing_gpu(
        fetched: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.suites.inspect_tasks import suite_task

    monkeypatch.setenv("RSR_TASKS_HOME", str(fetched[0]))
    monkeypatch.setenv("RSR_HAS_GPU", "0")
    with pytest.raises(RsrError, match=r"every selected task \(1\) needs a GPU"):
        suite_task("tb4", None, "list-gpus", None)


def test_fetch_does_refuse_a_refetch_whose_tasks_changed_at_the_same_ref_unless_repin(
        served: tuple[Path, str], tmp_path: Path) -> None:
    from rsr.suites.registry import PIN_RECORD, fetch_suite

    work, url = _standin(served, tmp_path, "drift")
    dest = tmp_path / "copy"
    _, first = fetch_suite("tb4", dest=dest, source=url)
    # The source publishes different content under the same version.
    (work / "tasks" / "write-greeting" / "instruction.md").write_text("Write something else.\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "drift"], cwd=work,
                   check=True)
    publish(work, served[0], "standin", "drift")
    with pytest.raises(RsrError, match=r"no longer gives the same tasks") as e:
        fetch_suite("tb4", dest=dest, source=url)
    assert "changed ['write-greeting']" in str(e.value)
    assert json.loads((dest / PIN_RECORD).read_text())["digest"] == first.digest  # the earlier copy stays

    _, second = fetch_suite("tb4", dest=dest, source=url, repin=True)
    assert second.digest != first.digest
    assert json.loads((dest / PIN_RECORD).read_text())["digest"] == second.digest


def test_fetch_does_pass_on_harbors_error_when_the_source_lacks_the_dataset(
        served: tuple[Path, str], tmp_path: Path) -> None:
    from rsr.suites.registry import fetch_suite

    _, url = _standin(served, tmp_path, "only-tb4")
    # tb3 is frontier-bench/frontier-bench@latest: a registry holding only terminal-bench lacks it.
    with pytest.raises(RsrError, match=r"`harbor download` exited 1: Error: Dataset 'frontier-bench'"):
        fetch_suite("tb3", dest=tmp_path / "tb3", source=url)
    assert not (tmp_path / "tb3").exists()


def test_fetch_rejects_an_rsr_harbor_that_is_not_an_executable(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.suites.registry import fetch_suite

    monkeypatch.setenv("RSR_HARBOR", str(tmp_path / "no-harbor"))
    with pytest.raises(RsrError, match=r"RSR_HARBOR=.*no-harbor is not an executable"):
        fetch_suite("tb4", dest=tmp_path / "tb4")


def test_find_harbor_does_say_how_to_install_it_when_none_is_found(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.suites import registry

    monkeypatch.delenv("RSR_HARBOR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(registry, "REPO_ROOT", tmp_path)
    with pytest.raises(RsrError, match=r"pip install harbor==0\.26\.0.*RSR_HARBOR"):
        registry.find_harbor()


def test_source_override_does_come_from_the_suite_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.suites.registry import source_override

    monkeypatch.setenv("RSR_SUITE_SOURCE_TB2_1", "git://127.0.0.1:9/x/y.git")
    assert source_override("tb2_1") == "git://127.0.0.1:9/x/y.git"
    assert source_override("tb2_1", "other") == "other"
    assert source_override("tb3") is None


def test_gpu_check_does_follow_the_override_and_rejects_a_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.sandbox.gpu import gpu_check

    monkeypatch.setenv("RSR_HAS_GPU", "1")
    assert gpu_check().available
    monkeypatch.setenv("RSR_HAS_GPU", "0")
    assert not gpu_check().available
    monkeypatch.setenv("RSR_HAS_GPU", "maybe")
    with pytest.raises(RsrError, match="RSR_HAS_GPU='maybe': expected 1 or 0"):
        gpu_check()


def test_registry_does_name_the_public_source_of_each_new_suite() -> None:
    from rsr.suites.registry import SUITES, how_to_fetch

    assert (SUITES["tb4"].hub, SUITES["tb4"].hub_ref) == ("terminal-bench/terminal-bench", "4.0.0")
    assert SUITES["tb3"].hub == "frontier-bench/frontier-bench"
    assert SUITES["tb2_1"].hub == "terminal-bench/terminal-bench-2-1"
    for name in ("tb2_1", "tb3", "tb4", "lhtb"):
        spec = SUITES[name]
        # No digest is invented: the note says the first fetch records them.
        assert spec.digest is None and "first `rsr tasks fetch` records" in spec.note
        assert f"rsr tasks fetch {name}" in how_to_fetch(name)
