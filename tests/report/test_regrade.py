"""Evidence bundles and regrade on real runs: `inspect eval ... -T evidence=true` (oracle and the
do-nothing agent on hello-world, real Docker sandboxes) keeps each sample's kept changes and
verifier record beside the log; `rsr regrade` replays them on the pristine image with no model
and no agent. Bundles, tasks and logs are then edited as a cheating submitter (or time) would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

from rsr.cli.main import main
from rsr.report.leaderboard import LogValidationError, load_board, load_entries, validate_log
from rsr.verify.evidence import EVIDENCE_DIR, BlobStore, SampleEvidence, read_manifest
from rsr.verify.regrade import regrade_log

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """{oracle, null}: one finished `rsr/core` log each with evidence bundles (hello-world)."""
    from inspect_ai import eval as inspect_eval

    from rsr.harness.null import null
    from rsr.harness.oracle import oracle
    from rsr.suites.inspect_tasks import core

    root = tmp_path_factory.mktemp("regrade")
    out = {}
    for name, solver in (("oracle", oracle()), ("null", null())):
        [log] = inspect_eval(core(tasks="hello-world", evidence=True), solver=solver, model="mockllm/model",
                             log_dir=str(root / name), display="none")
        assert log.status == "success"
        out[name] = Path(log.location)
    return out


def _copy_run(log: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    shutil.copytree(log.parent / EVIDENCE_DIR, dest / EVIDENCE_DIR)
    return Path(shutil.copy2(log, dest / log.name))


def _archive_blob(log: Path) -> Path:
    store = BlobStore(log.parent / EVIDENCE_DIR)
    [sample] = read_manifest(log).samples
    record = store.get_model(sample.record, SampleEvidence, "record")
    return store.path(record.changes.archive)


def test_regrade_log_does_reproduce_every_score_of_honest_runs(runs: dict[str, Path]) -> None:
    for name, want in (("oracle", 1.0), ("null", 0.0)):
        report = regrade_log(runs[name])
        assert report.ok, report.problems()
        [sample] = report.samples
        assert sample.regraded == sample.logged and sample.logged["passed"] == want
        assert report.manifest == read_manifest(runs[name]).digest
    assert main(["regrade", str(runs["oracle"]), str(runs["null"])]) == 0


def test_regrade_log_rejects_a_bundle_edited_by_one_byte(runs: dict[str, Path], tmp_path: Path) -> None:
    log = _copy_run(runs["null"], tmp_path / "run")
    blob = _archive_blob(log)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    report = regrade_log(log)
    [sample] = report.samples
    assert not report.ok and sample.status == "bundle-modified"
    assert f"{blob.name} in {log.parent / EVIDENCE_DIR} was modified" in sample.reason
    assert main(["regrade", str(log)]) == 1


def test_regrade_log_rejects_a_log_from_a_different_task_version(runs: dict[str, Path], tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(REPO / "tasks" / "core" / "hello-world", suite / "hello-world")
    test = suite / "hello-world" / "tests" / "test.sh"
    test.write_text(test.read_text() + "\n# a later version of the task\n")
    [sample] = regrade_log(runs["oracle"], tasks_root=suite).samples
    assert sample.status == "task-changed"
    assert f"task hello-world at {suite / 'hello-world'} has digest" in sample.reason and "the log ran" in sample.reason


def test_inspect_score_does_regrade_from_bundles_and_refuses_a_log_without_them(
        runs: dict[str, Path], tmp_path: Path) -> None:
    inspect = [str(Path(sys.executable).parent / "inspect"), "score", "--scorer", "rsr/verifier",
               "--action", "overwrite", "--display", "plain"]
    # The README's command, in place and without a terminal: without --overwrite Inspect asks
    # whether to overwrite the file, and with no terminal to answer it exits 1.
    out = _copy_run(runs["oracle"], tmp_path / "readme")
    done = subprocess.run([*inspect, "--overwrite", str(out)], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_eval_log(str(out)).results.scores[0].metrics["mean"].value == 1.0

    old = read_eval_log(str(runs["oracle"]))  # a log written before bundles existed
    for s in old.samples:
        s.store.pop("rsr_evidence")
    bare = tmp_path / "bare.eval"
    write_eval_log(old, str(bare))
    done = subprocess.run([*inspect, "--output-file", str(tmp_path / "zero.eval"), str(bare)], capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    text = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and not (tmp_path / "zero.eval").exists()
    assert "has no sandbox any more (the run finished) and its log keeps no evidence bundle" in text


def test_leaderboard_add_does_record_the_regrade_and_refuses_logs_it_cannot_reproduce(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    board = tmp_path / "board"
    board.mkdir()
    (board / "board.yaml").write_text(f"reference_agents: true\nrequire_regrade: true\nsuites:\n  core:\n"
                                      f"    path: {REPO / 'tasks' / 'core'}\n    tasks: [hello-world]\n"
                                      "    min_epochs: 1\n")
    assert main(["leaderboard", "add", str(runs["oracle"]), "--model-name", "Oracle", "--harness", "oracle",
                 "--board", str(board)]) == 0
    [entry] = load_entries(board / "entries")
    result = entry.suites["core"]
    assert (result.regrade.status, result.regrade.reproduced, result.regrade.samples) == ("reproduced", 1, 1)
    assert result.bundle is not None and result.bundle.manifest == read_manifest(runs["oracle"]).digest
    kept = board / result.log.stored
    assert (board / result.bundle.stored).is_file() and regrade_log(kept).ok  # the board's copy regrades too

    # Another "run" made of the same bundle: a new eval id and run id, the same samples and evidence.
    reused = _copy_run(runs["oracle"], tmp_path / "reused")
    log = read_eval_log(str(reused))
    log.eval.eval_id, log.eval.run_id = "x" * 22, "y" * 22
    write_eval_log(log, str(reused))
    assert main(["leaderboard", "add", str(reused), "--model-name", "Reused", "--harness", "oracle",
                 "--board", str(board)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    # The records name the eval they ran in (rsr.verify.binding).
    assert f"its evidence record names another execution: eval {read_eval_log(str(runs['oracle'])).eval.eval_id} " \
           f"(the sample's is {'x' * 22})" in err
    # ... and with new sample uuids too, the records no longer belong to the samples that name them.
    for s in log.samples:
        s.uuid = "z" * 22
    write_eval_log(log, str(reused))
    with pytest.raises(LogValidationError, match=r"sample uuid \w+ \(the sample's is zzzz"):
        validate_log(reused, load_board(board))
    assert [e.model_name for e in load_entries(board / "entries")] == ["Oracle"]

    edited = _copy_run(runs["null"], tmp_path / "edited")
    blob = _archive_blob(edited)
    blob.chmod(0o644)
    blob.write_bytes(blob.read_bytes() + b"\0")
    with pytest.raises(LogValidationError, match=r"regrade: sample hello-world epoch 1 \(hello-world\): "
                                                 r"bundle-modified: kept-changes archive sha256:"):
        validate_log(edited, load_board(board))

    old = read_eval_log(str(runs["null"]))
    for s in old.samples:
        s.scores["verifier"].metadata.pop("evidence")
    write_eval_log(old, str(tmp_path / "bare.eval"))
    with pytest.raises(LogValidationError, match=r"requires evidence bundles, but 1 of 1 samples have none"):
        validate_log(tmp_path / "bare.eval", load_board(board))


def test_table5_regrade_does_mark_each_cell_with_its_verification(runs: dict[str, Path], tmp_path: Path) -> None:
    from rsr.report.table5 import build_table5, render_markdown

    honest = _copy_run(runs["oracle"], tmp_path / "honest")
    edited = _copy_run(runs["oracle"], tmp_path / "edited")
    blob = _archive_blob(edited)
    blob.chmod(0o644)
    blob.write_bytes(b"x" + blob.read_bytes()[1:])
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy2(runs["oracle"], bare / runs["oracle"].name)  # the log without its evidence folder
    table = build_table5([honest.parent, edited.parent, bare], regrade=True)
    assert [r.verification["core"] for r in table.runs] == ["reproduced", "not-reproduced", "no-bundle"]
    row = next(line for line in render_markdown(table, tmp_path).splitlines() if line.startswith("| core mean"))
    # Each cell: the number, its verification mark, and the label of a reference agent's run.
    reference = " (rsr/oracle: reference solution, not a model)"
    assert row.split(" | ")[2:5] == [f"100.0% ± 0.0 {mark}{reference}" for mark in "✓✗?"]
    notes = " ".join(table.runs[1].notes)
    assert "regrade reproduced 0/1 samples" in notes and "bundle-modified" in notes
