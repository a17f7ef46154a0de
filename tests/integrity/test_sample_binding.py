"""Samples bound to their executions: a 3-epoch run that passes once cannot be made to pass
three times by copying its passing epoch over the failing ones (issue 27).

One real eval (Docker sandboxes, evidence bundles) of a synthetic task, 3 epochs, whose scripted
agent does the work only in epoch 1: an honest 1/3. The log is then rewritten as a cheating
submitter would, with more and more care, and regraded and validated.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import ChatMessageUser, get_model
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util import sandbox
from test_regrade_forgery import _task

from rsr.verify.binding import binding_problems
from rsr.verify.evidence import EVIDENCE_DIR, BlobStore, SampleEvidence, canonical_json
from rsr.verify.regrade import regrade_log

pytestmark = pytest.mark.docker


@agent
def first_epoch_only() -> Agent:
    """Two model calls (the same scripted replies every epoch, long enough to be stored as log
    attachments), then the work, in epoch 1 only."""
    async def execute(state: AgentState) -> AgentState:
        for turn in range(2):
            state.messages.append((await get_model().generate(state.messages)).message)
            state.messages.append(ChatMessageUser(content=f"turn {turn}: " + "go on " * 500))
        if sample_state().epoch == 1:
            await sandbox().exec(["bash", "-c", "echo 42 > /app/answer.txt"], timeout=60)
        return state

    return execute


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from inspect_ai import eval as inspect_eval

    import rsr.factory.scripted  # noqa: F401 - registers the scripted provider
    from rsr.suites.inspect_tasks import tasks_task

    root = tmp_path_factory.mktemp("binding")
    _task(root / "suite", "idle", "true\n")
    (root / "fixture.yaml").write_text('rules:\n  - {role: agent, replies: ["Looking.", "Writing it."]}\n')
    model = get_model("rsr-scripted/agent", fixture=str(root / "fixture.yaml"))
    [log] = inspect_eval(tasks_task("harbor", root / "suite", None, None, evidence=True), solver=first_epoch_only(),
                         model=model, epochs=3, log_dir=str(root / "logs"), display="none")
    assert log.status == "success", log.error
    passed = {s.epoch: s.scores["verifier"].value["passed"] for s in log.samples or []}
    assert passed == {1: 1.0, 2: 0.0, 3: 0.0}, passed
    return Path(log.location)


def _copy(log: Path, dest: Path) -> tuple[Path, EvalLog]:
    dest.mkdir(parents=True)
    shutil.copytree(log.parent / EVIDENCE_DIR, dest / EVIDENCE_DIR)
    path = Path(shutil.copy2(log, dest / log.name))
    return path, read_eval_log(str(path))


def _passing_everywhere(log: EvalLog, rebind: Any = None) -> None:
    """Epoch 1 copied over epochs 2 and 3; `rebind(sample, epoch)` edits each copy."""
    [first] = [s for s in log.samples or [] if s.epoch == 1]
    copies = []
    for epoch in (2, 3):
        copy = first.model_copy(deep=True)
        copy.epoch = epoch
        if rebind is not None:
            rebind(copy, epoch)
        copies.append(copy)
    log.samples = [first, *copies]


def test_binding_does_accept_an_honest_multi_epoch_run(run: Path) -> None:
    log = read_eval_log(str(run))
    assert all(sum(e.event == "model" for e in s.events) == 2 for s in log.samples or [])
    assert binding_problems(run, log) == []
    report = regrade_log(run)
    assert report.ok, report.problems()


def test_regrade_rejects_the_passing_epoch_copied_over_the_failing_ones(run: Path, tmp_path: Path) -> None:
    path, log = _copy(run, tmp_path / "copied")
    _passing_everywhere(log)
    write_eval_log(log, str(path))
    report = regrade_log(path)
    assert not report.ok and {s.status for s in report.samples} == {"unbound"}, report.problems()
    assert "shares its uuid" in report.samples[1].reason


def test_regrade_rejects_copies_with_new_uuids_and_records_rebound_to_them(run: Path, tmp_path: Path) -> None:
    # With fresh uuids the records no longer belong to their samples; with records forged for
    # each copy (uuid and epoch rewritten, re-hashed), the one transcript is still counted twice.
    path, log = _copy(run, tmp_path / "rebound")
    store = BlobStore(path.parent / EVIDENCE_DIR)

    def new_uuid(sample: Any, epoch: int) -> None:
        sample.uuid = f"forged{epoch}".ljust(22, "x")

    _passing_everywhere(log, new_uuid)
    write_eval_log(log, str(path))
    assert any("its evidence record names another execution: epoch 1 (the sample's is 2)" in p
               for p in binding_problems(path, log))

    def new_record(sample: Any, epoch: int) -> None:
        new_uuid(sample, epoch)
        score = sample.scores["verifier"]
        record = store.get_model(score.metadata["evidence"]["record"], SampleEvidence, "record")
        digest = store.put(canonical_json(record.model_copy(update={"sample_uuid": sample.uuid, "epoch": epoch})))
        score.metadata["evidence"] = {"record": digest}

    _passing_everywhere(log, new_record)
    write_eval_log(log, str(path))
    problems = binding_problems(path, log)
    assert len(problems) == 3 and all("shares its transcript" in p for p in problems), problems
    report = regrade_log(path)
    assert [s.status for s in report.samples] == ["unbound"] * 3


def test_leaderboard_validation_rejects_a_copied_epoch(run: Path, tmp_path: Path) -> None:
    from rsr.report.leaderboard import LogValidationError, load_board, validate_log

    path, log = _copy(run, tmp_path / "board-run")
    _passing_everywhere(log)
    write_eval_log(log, str(path))
    board = tmp_path / "board"
    board.mkdir()
    (board / "board.yaml").write_text(f"reference_agents: true\nsuites:\n  task:\n    path: {run.parent.parent}/suite"
                                      "\n    tasks: [idle]\n    min_epochs: 1\n")
    with pytest.raises(LogValidationError, match=r"sample idle epoch 2: shares its uuid"):
        validate_log(path, load_board(board))
