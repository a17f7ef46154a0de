"""Invariant 3 for regrades: the mode a regrade judges under comes from the task and the
regrader (a board's requirement), never from the submission.

A real run (Docker, the reference solver) of a task that declares no deliverables, whose
"solution" plants a fake /usr/bin/bash that writes a pass. Run in warn mode, the fake bash is
carried (warn carries everything) and the sample passes with an integrity warning; its bundle
record honestly says `warn`. The submitter then claims a strict, clean verdict in the log's score
(a board counts and publishes that claim): neither a plain regrade nor a board requiring strict,
a regrade and a clean review may accept the pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from inspect_ai.log import read_eval_log, write_eval_log

from rsr.tasks.load import load_task
from rsr.verify.evidence import EVIDENCE_DIR, BlobStore, SampleEvidence, canonical_json
from rsr.verify.regrade import ModeMismatch, regrade_log, regrade_mode

REPO = Path(__file__).resolve().parents[2]
CORE_DOCKERFILE = (REPO / "tasks/core/hello-world/environment/Dockerfile").read_text()
TEST_SH = """#!/bin/bash
if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""
# The planted bash: a pass whatever the work (written aside, then renamed over the running one).
PLANT = """cat > /tmp/fake <<'EOF'
#!/bin/sh
echo 1 > /logs/verifier/reward.txt
exit 0
EOF
chmod 755 /tmp/fake && mv /tmp/fake /usr/bin/bash
"""


def _task(root: Path, name: str, solve: str, declared: bool) -> Path:
    d = root / name
    for sub in ("environment", "tests", "solution"):
        (d / sub).mkdir(parents=True)
    (d / "task.toml").write_text(f'schema_version = "1.1"\n[task]\nname = "test/rsr-mode-{name}"\n[verifier]\n'
                                 f'timeout_sec = 60\n{"allow_changes = []" if declared else ""}\n[agent]\n'
                                 'timeout_sec = 120\n[environment]\nworkdir = "/app"\nallow_internet = false\n')
    (d / "instruction.md").write_text("Write 42 to /app/answer.txt.\n")
    (d / "environment" / "Dockerfile").write_text(CORE_DOCKERFILE)
    (d / "tests" / "test.sh").write_text(TEST_SH)
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\n" + solve)
    for f in (d / "tests" / "test.sh", d / "solution" / "solve.sh"):
        f.chmod(0o755)
    return d


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The warn-mode log of the planted bash: passed 1 with an integrity warning."""
    from inspect_ai import eval as inspect_eval

    from rsr.harness.oracle import oracle
    from rsr.suites.inspect_tasks import harbor

    root = tmp_path_factory.mktemp("mode")
    _task(root / "suite", "planted", PLANT, declared=False)
    [log] = inspect_eval(harbor(path=str(root / "suite"), evidence=True, integrity="warn"),
                         solver=oracle(), model="mockllm/model", log_dir=str(root / "logs"), display="none")
    assert log.status == "success", log.error
    [sample] = log.samples or []
    score = sample.scores["verifier"]
    assert score.value["passed"] == 1.0, score.explanation
    assert score.metadata["integrity"]["mode"] == "warn" and "/usr/bin/bash" in str(score.metadata["integrity"])
    return Path(log.location)


def _copy(log: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    shutil.copytree(log.parent / EVIDENCE_DIR, dest / EVIDENCE_DIR)
    return Path(shutil.copy2(log, dest / log.name))


def _claim_strict(log_path: Path, *, record_too: bool = False) -> Path:
    """What the submitter edits: the score's integrity claim (strict, clean), and with
    `record_too` the bundle record's mode as well (re-hashed, the score naming the new record)."""
    log = read_eval_log(str(log_path))
    [sample] = log.samples or []
    score = sample.scores["verifier"]
    score.metadata["integrity"] = {**score.metadata["integrity"], "mode": "strict", "verdict": "clean",
                                   "paths": [], "notes": []}
    if record_too:
        store = BlobStore(log_path.parent / EVIDENCE_DIR)
        record = store.get_model(score.metadata["evidence"]["record"], SampleEvidence, "record")
        record = record.model_copy(update={"inputs": record.inputs.model_copy(update={"integrity": "strict"})})
        digest = store.put(canonical_json(record))
        score.metadata["evidence"] = {"record": digest}
        sample.store["rsr_evidence"] = {**sample.store["rsr_evidence"], "record": digest}
    write_eval_log(log, str(log_path))
    return log_path


def test_regrade_mode_does_take_its_floor_from_the_task_and_the_regrader(tmp_path: Path) -> None:
    undeclared = load_task(_task(tmp_path, "u", "true\n", declared=False))
    declared = load_task(_task(tmp_path, "d", "true\n", declared=True))
    assert regrade_mode(undeclared, "warn") == "warn"
    assert regrade_mode(undeclared, "strict") == "strict"  # a claim above the floor is the one checked
    assert regrade_mode(declared, "strict", logged_mode="strict", required="strict") == "strict"
    for task, record, logged, required, why in (
            (declared, "warn", None, None, "the task declares its deliverables"),
            (undeclared, "warn", None, "strict", "the regrade requires strict"),
            (undeclared, "warn", "strict", None, "the log's score says .* 'strict', its evidence record 'warn'"),
            (undeclared, "lenient", None, None, "integrity mode 'lenient'")):
        with pytest.raises(ModeMismatch, match=why):
            regrade_mode(task, record, logged_mode=logged, required=required)


@pytest.mark.docker
def test_regrade_does_reproduce_the_honest_warn_verdict_only_when_nothing_requires_strict(planted: Path) -> None:
    # The run was warn: a plain regrade reproduces what warn mode says (a pass with a warning,
    # which the log's integrity record shows); a regrader requiring strict refuses the record.
    assert regrade_log(planted).ok
    [found] = regrade_log(planted, required="strict").samples
    assert found.status == "bundle-modified" and found.regraded is None, (found.status, found.reason)
    assert "the regrade requires strict" in found.reason


@pytest.mark.docker
def test_regrade_rejects_a_strict_claim_over_a_warn_record(planted: Path, tmp_path: Path) -> None:
    log = _claim_strict(_copy(planted, tmp_path / "claim"))
    [found] = regrade_log(log).samples
    assert found.status == "bundle-modified" and found.regraded is None, (found.status, found.reason)
    assert "its evidence record 'warn'" in found.reason


@pytest.mark.docker
def test_regrade_does_not_reproduce_a_pass_from_a_strict_record_of_a_planted_bash(planted: Path,
                                                                                 tmp_path: Path) -> None:
    # The record re-hashed to say strict too: the strict plan never carries /usr/bin/bash (or, with
    # no deliverables inferred here for the task, refuses the strict regrade).
    log = _claim_strict(_copy(planted, tmp_path / "record"), record_too=True)
    [found] = regrade_log(log).samples
    assert found.status != "reproduced" and found.regraded != {"passed": 1.0, "reward": 1.0, "process": 1.0}
    assert found.status in ("bundle-modified", "unsupported"), (found.status, found.reason)


@pytest.mark.docker
def test_board_requiring_strict_regrade_and_clean_review_rejects_the_planted_bash(planted: Path,
                                                                                   tmp_path: Path) -> None:
    from rsr.report.leaderboard import LogValidationError, load_board, validate_log

    log = _claim_strict(_copy(planted, tmp_path / "board"))
    board = tmp_path / "b"
    board.mkdir()
    (board / "board.yaml").write_text(yaml.safe_dump({
        "reference_agents": True, "integrity": "strict", "require_regrade": True, "require_clean_review": True,
        "suites": {"harbor": {"path": str(planted.parent.parent / "suite"), "min_epochs": 1}}}))
    with pytest.raises(LogValidationError) as caught:
        validate_log(log, load_board(board))
    problems = caught.value.problems
    assert any(p.startswith("regrade:") and "bundle-modified" in p for p in problems), problems


@pytest.mark.docker
def test_regrade_cli_does_require_the_mode_it_is_given(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rsr.cli.main import main

    assert main(["regrade", str(planted)]) == 0
    assert main(["regrade", str(planted), "--integrity", "strict"]) == 1
    assert "bundle-modified" in capsys.readouterr().out
    assert main(["regrade", str(planted), "--integrity", "lenient"]) == 2
    assert "--integrity 'lenient': expected strict or warn" in capsys.readouterr().err
