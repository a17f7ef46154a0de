"""A regrade trusts nothing the submitter wrote: forged bundles of a real failing run.

One eval (real Docker sandboxes, the reference solver) of two synthetic tasks on the core
tasks' first layer: `honest` (its solution writes the answer) and `idle` (its solution does
nothing, so it fails). The idle sample's log and bundle are then rewritten as a cheating
submitter would - archive, changes record, sample record and log score, all re-hashed - and
regraded: the regrade must refuse the bundle or reproduce the true failing verdict.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

from rsr.tasks.load import load_task
from rsr.verify.evidence import EVIDENCE_DIR, BlobStore, SampleEvidence, canonical_json
from rsr.verify.regrade import regrade_log

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
CORE_DOCKERFILE = (REPO / "tasks/core/hello-world/environment/Dockerfile").read_text()
TEST_SH = """#!/bin/bash
if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""
# What a forged /usr/bin/bash (or a BASH_ENV hook) does: a pass, whatever the work.
FORGED_PASS = b"#!/bin/sh\necho 1 > /logs/verifier/reward.txt\nexit 0\n"
DEEP = "/".join(["d"] * 1100)


def _task(root: Path, name: str, solve: str) -> None:
    d = root / name
    (d / "environment").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "solution").mkdir()
    (d / "task.toml").write_text(f'schema_version = "1.1"\n[task]\nname = "test/rsr-forge-{name}"\n[verifier]\n'
                                 'timeout_sec = 60\nallow_changes = []\n[agent]\ntimeout_sec = 120\n'
                                 '[environment]\nworkdir = "/app"\nallow_internet = false\n')
    (d / "instruction.md").write_text("Write 42 to /app/answer.txt.\n")
    (d / "environment" / "Dockerfile").write_text(CORE_DOCKERFILE)
    (d / "tests" / "test.sh").write_text(TEST_SH)
    (d / "tests" / "test.sh").chmod(0o755)
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\n" + solve)
    (d / "solution" / "solve.sh").chmod(0o755)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from inspect_ai import eval as inspect_eval

    from rsr.harness.oracle import oracle
    from rsr.suites.inspect_tasks import tasks_task

    root = tmp_path_factory.mktemp("forge")
    suite = root / "suite"
    _task(suite, "honest", "echo 42 > /app/answer.txt\n")
    _task(suite, "idle", "true\n")
    [log] = inspect_eval(tasks_task("harbor", suite, None, None, evidence=True), solver=oracle(),
                         model="mockllm/model", log_dir=str(root / "logs"), display="none")
    assert log.status == "success", log.error
    scores = {str(s.id): s.scores["verifier"].value["passed"] for s in log.samples or []}
    assert scores == {"honest": 1.0, "idle": 0.0}, scores
    return Path(log.location)


def _copy(log: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    shutil.copytree(log.parent / EVIDENCE_DIR, dest / EVIDENCE_DIR)
    return Path(shutil.copy2(log, dest / log.name))


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]], base: bytes = b"") -> bytes:
    """`base`'s members followed by `members`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as out:
        if base:
            with tarfile.open(fileobj=io.BytesIO(base)) as src:
                for m in src:
                    out.addfile(m, src.extractfile(m) if m.isreg() else None)
        for info, data in members:
            if data is not None:
                info.size = len(data)
            out.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _file(name: str, mode: int = 0o755, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode, info.mtime, info.type, info.linkname = mode, int(time.time()), kind, link
    return info


Forge = Callable[[bytes, dict[str, Any]], tuple[bytes, dict[str, Any]]]


def _forge(log_path: Path, sample_id: str, forge: Forge) -> None:
    """Rewrite one sample's bundle with `forge(archive, changes record)` and claim a pass for it:
    new blobs, a new sample record, the log's score and store naming it (all re-hashed)."""
    store = BlobStore(log_path.parent / EVIDENCE_DIR)
    log = read_eval_log(str(log_path))
    [sample] = [s for s in log.samples or [] if str(s.id) == sample_id]
    score = sample.scores["verifier"]
    record = store.get_model(score.metadata["evidence"]["record"], SampleEvidence, "record")
    archive, described = forge(store.get(record.changes.archive), json.loads(store.get(record.changes.changes)))
    described.update(archive_sha256=hashlib.sha256(archive).hexdigest(), archive_bytes=len(archive))
    passing = {"passed": 1.0, "reward": 1.0, "process": 1.0}
    record = record.model_copy(update={
        "changes": record.changes.model_copy(update={"archive": store.put(archive), "archive_bytes": len(archive),
                                                     "changes": store.put(json.dumps(described).encode())}),
        "outputs": record.outputs.model_copy(update={"score": passing, "error": None, "returncode": 0})})
    digest = store.put(canonical_json(record))
    score.value, score.answer = passing, "passed"
    score.metadata["evidence"] = {"record": digest}
    score.metadata["error"] = None
    sample.store["rsr_evidence"] = {"record": digest, "store": str(store.root)}
    write_eval_log(log, str(log_path))


def _with_bash(archive: bytes, described: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """A forged /usr/bin/bash beside an innocent workdir file, which alone the kept list names."""
    members = [(_file("app/notes.txt", 0o644), b"notes\n"), (_file("usr/bin/bash"), FORGED_PASS)]
    return _tar(members, archive), {**described, "kept": [*described["kept"], "/app/notes.txt"]}


def _regraded(log: Path, sample_id: str) -> Any:
    [found] = [s for s in regrade_log(log).samples if s.id == sample_id]
    return found


def test_regrade_does_reproduce_honest_samples(run: Path) -> None:
    report = regrade_log(run)
    assert report.ok, report.problems()


def test_capture_does_keep_the_verdict_of_work_with_a_deep_directory_chain(tmp_path: Path) -> None:
    # Honest work with a directory chain deeper than Python's recursion limit, in the workdir (a
    # deliverable) and outside it (dropped): neither the storage watchdog, the capture nor the
    # regrade may crash, nor the sample lose its verdict.
    from inspect_ai import eval as inspect_eval

    from rsr.harness.oracle import oracle
    from rsr.suites.inspect_tasks import tasks_task

    _task(tmp_path / "suite", "deep", f"set -e\ncd /app && mkdir -p {DEEP} && touch {DEEP}/leaf\n"
                                      f"cd /root && mkdir -p {DEEP} && touch {DEEP}/leaf\necho 42 > /app/answer.txt\n")
    [log] = inspect_eval(tasks_task("harbor", tmp_path / "suite", None, None, evidence=True), solver=oracle(),
                         model="mockllm/model", log_dir=str(tmp_path / "logs"), display="none")
    [sample] = log.samples or []
    score = sample.scores["verifier"]
    assert score.value["passed"] == 1.0, score.explanation
    integrity = score.metadata["integrity"]
    assert integrity["verdict"] == "clean" and integrity["kept"] > 1100, integrity["notes"]
    assert any(d.startswith("/root/d/d/") for d in integrity["dropped"])
    assert regrade_log(log.location).ok

    # The live audit (isolation = "live", engines without a readable capture) walks the same chain.
    from rsr.sandbox import engine
    from rsr.verify.integrity import overlay_changes
    from rsr.verify.rebuild import task_image

    ref, _ = task_image(load_task(tmp_path / "suite" / "deep"))
    container = engine.api().create_container(ref, command=["sleep", "infinity"])["Id"]
    try:
        engine.api().start(container)
        engine.run_exec(container, ["bash", "-c", f"mkdir -p /root/{DEEP}"], user="root", timeout=60)
        assert len([c for c in overlay_changes(container) or [] if c["Path"].startswith("/root/d")]) == 1100
    finally:
        engine.remove_container(container)


def test_regrade_rejects_an_archive_member_the_kept_list_does_not_mention(run: Path, tmp_path: Path) -> None:
    # The attack of issue 27: a replaced /usr/bin/bash added to the archive, the record's kept
    # list left as it was (so the audit of the record never sees it).
    log = _copy(run, tmp_path / "bash")
    _forge(log, "idle", _with_bash)
    found = _regraded(log, "idle")
    assert found.status == "bundle-modified", (found.status, found.reason)
    assert "archive member /usr/bin/bash is outside the task's deliverables" in found.reason


def test_regrade_rejects_a_record_env_that_sources_a_workdir_hook(run: Path, tmp_path: Path) -> None:
    # BASH_ENV (and the working directory, and limits) in the changes record: the verification
    # container's configuration comes from the task and its image, never from the bundle.
    def forge(archive: bytes, described: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
        config = described["container"]["Config"]
        config["Env"] = [*(config.get("Env") or []), "BASH_ENV=/app/.hook"]
        config["WorkingDir"] = "/tmp"
        described["container"]["HostConfig"].update({"Memory": 0, "MemorySwap": 0, "PidsLimit": 0, "NanoCpus": 0})
        described["kept"] = [*described["kept"], "/app/.hook"]
        return _tar([(_file("app/.hook", 0o644), FORGED_PASS)], archive), described

    log = _copy(run, tmp_path / "env")
    _forge(log, "idle", forge)
    found = _regraded(log, "idle")
    assert found.status == "differs", (found.status, found.reason)
    assert found.regraded == {"passed": 0.0, "reward": 0.0, "process": 0.0}


def test_regrade_rejects_a_record_that_claims_warn_mode_for_a_strict_task(run: Path, tmp_path: Path) -> None:
    # Under warn every change is carried; a task that declares its deliverables is regraded
    # strict whatever its record says.
    log = _copy(run, tmp_path / "warn")
    _forge(log, "idle", lambda archive, described: _with_bash(archive, {**described, "plan": {"trust": "harbor",
                                                                                              "roots": []}}))
    store = BlobStore(log.parent / EVIDENCE_DIR)
    loaded = read_eval_log(str(log))
    [sample] = [s for s in loaded.samples or [] if str(s.id) == "idle"]
    record = store.get_model(sample.scores["verifier"].metadata["evidence"]["record"], SampleEvidence, "record")
    record = record.model_copy(update={"inputs": record.inputs.model_copy(update={"integrity": "warn"})})
    digest = store.put(canonical_json(record))
    sample.scores["verifier"].metadata["evidence"] = {"record": digest}
    write_eval_log(loaded, str(log))
    found = _regraded(log, "idle")
    assert found.status == "bundle-modified" and "'warn'" in found.reason, (found.status, found.reason)


@pytest.mark.parametrize("members,deleted,why", [
    ([(_file("app/d", kind=tarfile.SYMTYPE, link="/usr/bin"), None), (_file("app/d/bash"), FORGED_PASS)], [],
     "archive member /app/d/bash lies beyond the link /app/d"),
    ([(_file("app/bash", kind=tarfile.LNKTYPE, link="usr/bin/bash"), None)], [],
     "hard link /app/bash points at /usr/bin/bash"),
    ([(_file("app/dev", kind=tarfile.CHRTYPE), None)], [], "archive member /app/dev is a special file"),
    ([(_file("app/../usr/bin/bash"), FORGED_PASS)], [], "is not a canonical path"),
    ([(_file("app/x"), b"1"), (_file("app/x"), b"2")], [], "archive member /app/x appears twice"),
    ([], ["/usr/bin/bash"], "deleted path /usr/bin/bash is outside the task's deliverables"),
    ([(_file("app/l", kind=tarfile.SYMTYPE, link="/usr/bin"), None)], ["/app/l/bash"],
     "deleted path /app/l/bash lies beyond the link /app/l"),
])
def test_regrade_rejects_archives_no_capture_writes(run: Path, tmp_path: Path, members: list[Any],
                                                    deleted: list[str], why: str) -> None:
    from rsr.verify.rebuild import ForgedArchive, rebuild_changes

    task = load_task(run.parent.parent / "suite" / "idle")
    with pytest.raises(ForgedArchive, match=why.replace("(", r"\(").replace(".", r"\.")):
        rebuild_changes(task, _tar(members), deleted, "strict", tmp_path)


def test_rebuilt_changes_do_take_plan_and_container_from_the_task(run: Path, tmp_path: Path) -> None:
    from rsr.verify.rebuild import rebuild_changes

    task = load_task(run.parent.parent / "suite" / "idle")
    archive = _tar([(_file("app", kind=tarfile.DIRTYPE), None), (_file("app/answer.txt", 0o644), b"42\n")])
    changes = rebuild_changes(task, archive, [], "strict", tmp_path)
    assert changes.kept == ["/app", "/app/answer.txt"] and changes.added == ["/app/answer.txt"]
    assert changes.plan.trust == "deliverables" and changes.plan.roots == ["/app"]
    config, host = changes.container["Config"], changes.container["HostConfig"]
    assert config["WorkingDir"] == "/app" and not any(e.startswith("BASH_ENV=") for e in config["Env"])
    assert host["Memory"] == task.config.environment.memory_mb * 2**20 and host["NetworkMode"] == "none"


def test_inspect_score_does_regrade_a_forged_env_to_its_true_failure(run: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    def forge(archive: bytes, described: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
        described["container"]["Config"]["Env"].append("BASH_ENV=/app/.hook")
        described["kept"] = [*described["kept"], "/app/.hook"]
        return _tar([(_file("app/.hook", 0o644), FORGED_PASS)], archive), described

    log = _copy(run, tmp_path / "score")
    _forge(log, "idle", forge)
    out = tmp_path / "rescored.eval"
    done = subprocess.run([str(Path(sys.executable).parent / "inspect"), "score", "--scorer", "rsr/verifier",
                           "--action", "overwrite", "--display", "plain", "--output-file", str(out), str(log)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    passed = {str(s.id): s.scores["verifier"].value["passed"] for s in read_eval_log(str(out)).samples or []}
    assert passed == {"honest": 1.0, "idle": 0.0}
