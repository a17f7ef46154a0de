"""Suite registry: pinned sources, local copies, and a clear error when a suite is not here."""

from __future__ import annotations

import json
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


def test_resolve_suite_path_says_a_private_suite_has_no_public_source(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # It read "source no public source is not available offline" in Table 5's skip lines.
    monkeypatch.setenv("RSR_TASKS_HOME", str(tmp_path / "cache"))
    with pytest.raises(RsrError) as e:
        resolve_suite_path("tbh")
    message = str(e.value)
    assert message.startswith("Terminal-Bench Hard (self-built) (tbh) is not on this machine (no public source")
    assert "source no public source" not in message
    # A public suite that is not fetched names the command that fetches it.
    with pytest.raises(RsrError, match=r"not fetched; `rsr tasks fetch tb2_1` downloads the Harbor hub dataset"):
        resolve_suite_path("tb2_1")


def test_find_image_map_names_the_environment_variable_it_reads(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.sandbox.images import find_image_map

    monkeypatch.setenv("RSR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RSR_K8S_IMAGES", raising=False)
    with pytest.raises(RsrError) as e:
        find_image_map(None)
    assert str(e.value).endswith("or name a map with -T images=FILE or $RSR_K8S_IMAGES"), str(e.value)


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


def _git(*args: str, cwd: Path | None = None) -> str:
    import subprocess

    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main",
                           *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def pinned_remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A bare git repo holding a two-task suite, registered as tb2's pinned source."""
    work = tmp_path / "work"
    work.mkdir()
    harbor_task(work, "alpha")
    harbor_task(work, "beta")
    _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("commit", "-qm", "suite", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work)
    (work / "beta" / "instruction.md").write_text("A later, different instruction.\n")
    _git("commit", "-qam", "later", cwd=work)
    bare = tmp_path / "remote.git"
    _git("clone", "-q", "--bare", str(work), str(bare))
    # Let a shallow fetch of a non-tip commit work, as GitHub allows.
    _git("config", "uploadpack.allowReachableSHA1InWant", "true", cwd=bare)
    spec = SUITES["tb2"].model_copy(update={"git_url": f"file://{bare}", "git_commit": commit})
    monkeypatch.setitem(SUITES, "tb2", spec)
    monkeypatch.setenv("RSR_TASKS_HOME", str(tmp_path / "home"))
    return f"file://{bare}", commit


def test_tb2_is_pinned_to_the_commit_harbors_registry_lists() -> None:
    assert SUITES["tb2"].git_commit == "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c"


def test_fetch_suite_checks_out_the_pinned_commit_and_records_its_digest(pinned_remote: tuple[str, str]) -> None:
    from rsr.suites.registry import PIN_RECORD, fetch_suite, tasks_home

    url, commit = pinned_remote
    root, pin = fetch_suite("tb2")
    assert root == tasks_home() / "tb2" and pin.commit == commit
    assert (root / "beta" / "instruction.md").read_text().startswith("Write done")  # the pinned, not the tip
    assert json.loads((root / PIN_RECORD).read_text())["digest"] == pin.digest
    task = tb2(tasks="alpha")
    assert task.metadata["pin_status"] == "pinned" and task.metadata["unpinned"] is False
    assert task.metadata["pinned_commit"] == commit and [s.id for s in task.dataset] == ["alpha"]


def test_eval_refuses_a_copy_that_drifted_from_its_pin_unless_unpinned(pinned_remote: tuple[str, str]) -> None:
    from rsr.suites.registry import fetch_suite

    root, _ = fetch_suite("tb2")
    (root / "alpha" / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    with pytest.raises(RsrError, match=r"(?s)does not match its pin: digest .* differs .*-T unpinned=true"):
        tb2()
    task = tb2(unpinned="true")
    assert task.metadata["unpinned"] is True and "differs" in task.metadata["pin_reason"]


def test_eval_refuses_a_hand_made_copy_of_a_pinned_suite(tmp_path: Path) -> None:
    harbor_task(tmp_path / "copy", "t1")
    with pytest.raises(RsrError, match=r"not made by `rsr tasks fetch tb2`"):
        tb2(path=str(tmp_path / "copy"))


def test_fetch_cli_reports_commit_and_digest(pinned_remote: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    from rsr.cli.main import main

    assert main(["tasks", "fetch", "tb2"]) == 0
    out = capsys.readouterr().out
    assert pinned_remote[1] in out and "sha256:" in out


def test_fetch_explains_a_suite_without_public_source() -> None:
    from rsr.suites.registry import fetch_suite

    with pytest.raises(RsrError, match="no public source to fetch"):
        fetch_suite("tbh")


def test_fetch_names_the_source_when_git_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.suites.registry import fetch_suite

    monkeypatch.setenv("RSR_TASKS_HOME", str(tmp_path / "home"))
    with pytest.raises(RsrError, match=r"could not fetch file://.*missing\.git@69671fba"):
        fetch_suite("tb2", git_url=f"file://{tmp_path}/missing.git")


def test_sample_metadata_records_the_network_policy(tmp_path: Path) -> None:
    harbor_task(tmp_path, "online", toml='[environment]\nworkdir = "/app"\n')
    default = tbh(path=str(tmp_path)).dataset[0].metadata
    assert default["allow_internet"] is True and default["network_policy"] == "task"
    forced = tbh(path=str(tmp_path), network="none")
    assert forced.dataset[0].metadata["allow_internet"] is False and forced.metadata["network_policy"] == "none"
    assert forced.dataset[0].metadata["task_allow_internet"] is True
    with pytest.raises(RsrError, match="network='open'"):
        tbh(path=str(tmp_path), network="open")


def test_prebuilt_image_tasks_get_their_environment_files_in_the_workdir(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "prebuilt", toml='[environment]\ndocker_image = "debian:bookworm-slim"\n'
                                              'workdir = "/srv"\n', extra={"environment/data/in.csv": "a,b\n"})
    (d / "environment" / "Dockerfile").unlink()
    sample = tbh(path=str(tmp_path)).dataset[0]
    assert sample.files == {"/srv/data/in.csv": str(d / "environment" / "data" / "in.csv")}
    built = harbor_task(tmp_path / "b", "built", extra={"environment/data/in.csv": "a,b\n"})
    assert not tbh(path=str(built.parent)).dataset[0].files
