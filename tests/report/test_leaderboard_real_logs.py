"""The leaderboard on logs as `rsr eval run` writes them: a core task with milestones (its
reward.json is long enough for Inspect to store it as an attachment), run by the oracle under
rsr's offline scripted model (`rsr-scripted/`), one epoch."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rsr.cli.main import main
from rsr.errors import RsrError
from rsr.report.leaderboard import (
    LogValidationError,
    build_entry,
    load_board,
    validate_log,
)

pytestmark = [pytest.mark.docker]

REPO = Path(__file__).resolve().parents[2]
TASK = "incident-backdoor-cleanup"  # [metadata] milestones: reward.json holds one key per milestone
FIXTURE = REPO / "examples" / "scripted" / "hello-world.yaml"


@pytest.fixture(scope="module")
def milestone_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("milestone")
    spec = root / "one-epoch.yaml"
    spec.write_text(yaml.safe_dump({"name": "one-epoch", "suites": [{"task": "rsr/core"}], "epochs": 1,
                                    "reducers": ["mean"], "agent": "rsr/oracle"}))
    old = os.environ.get("INSPECT_DISPLAY")
    os.environ["INSPECT_DISPLAY"] = "none"
    try:
        rc = main(["eval", "run", str(spec), "--model", "rsr-scripted/agent", "-M", f"fixture={FIXTURE}",
                   "--log-dir", str(root / "logs"), "-T", f"tasks={TASK}"])
    finally:
        if old is None:
            os.environ.pop("INSPECT_DISPLAY", None)
        else:
            os.environ["INSPECT_DISPLAY"] = old
    assert rc == 0
    (log,) = (root / "logs").glob("*.eval")
    yield log


def _board(root: Path, **extra: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    pin = {"path": str(REPO / "tasks" / "core"), "tasks": [TASK], "min_epochs": 1}
    (root / "board.yaml").write_text(yaml.safe_dump({**extra, "suites": {"core": pin}}))
    return root


def test_leaderboard_check_does_read_attached_reward_json_of_a_milestone_task(
        milestone_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from inspect_ai.log import read_eval_log_sample

    # The premise: the transcript holds the verifier's reward.json as a reference, not as text.
    raw = read_eval_log_sample(str(milestone_log), id=TASK, epoch=1)
    reads = [e.data for e in raw.events if e.event == "info" and e.source == "rsr/verifier"]
    assert any(str((d.get("reward_files") or {}).get("reward.json", "")).startswith("attachment://")
               for d in reads if isinstance(d, dict))
    board = _board(tmp_path / "board", reference_agents=True)
    assert main(["leaderboard", "check", str(milestone_log), "--board", str(board)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"ok {milestone_log.name}: core, 1 tasks x 1 epochs, mean 1.000" in out


def test_validate_log_rejects_rsr_scripted_model_unless_the_board_accepts_reference_agents(
        milestone_log: Path, tmp_path: Path) -> None:
    strict = load_board(_board(tmp_path / "strict", harnesses=["rsr/oracle"]))
    with pytest.raises(LogValidationError, match=r"model 'rsr-scripted/agent' replays scripted outputs"):
        validate_log(milestone_log, strict)
    assert validate_log(milestone_log, load_board(_board(tmp_path / "test", reference_agents=True)))


def test_build_entry_does_take_a_board_listed_harness_name_without_a_namespace(
        milestone_log: Path, tmp_path: Path) -> None:
    board = load_board(_board(tmp_path / "b", reference_agents=True, harnesses=["oracle-mine"]))
    v = validate_log(milestone_log, board)
    # As a log of an agent registered without a namespace records it (what validate_log lets
    # through when the board lists the name).
    v = v.model_copy(update={"log": v.log.model_copy(update={"solver": "oracle-mine"})})
    entry = build_entry([v], model_name="m", harness="oracle-mine", listed=board.config.harnesses)
    assert entry.harness == "oracle-mine"
    with pytest.raises(RsrError, match=r"not the declared harness 'rsr/oracle-mine'"):
        build_entry([v], model_name="m", harness="oracle-mine")
