"""Leaderboard integrity: only declared, registered harnesses; the verifier's integrity verdicts
recorded per entry; boards that require strict integrity. Real `.eval` logs (conftest)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log

from rsr.cli.main import main
from rsr.errors import RsrError
from rsr.report.integrity import sample_verdict, summarize
from rsr.report.leaderboard import LogValidationError, build_entry, load_board, load_entries, validate_log

REPO = Path(__file__).resolve().parents[2]


def _rewritten(src: Path, dest: Path, edit: Callable[[EvalLog], None]) -> Path:
    log = read_eval_log(str(src))
    edit(log)
    write_eval_log(log, str(dest))
    return dest


def _board(root: Path, min_epochs: int | None = None, **extra: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    pin: dict[str, object] = {"path": str(REPO / "tasks" / "core"), "tasks": ["hello-world", "semver-sort"]}
    if min_epochs is not None:
        pin["min_epochs"] = min_epochs
    (root / "board.yaml").write_text(yaml.safe_dump({"reference_agents": True, **extra, "suites": {"core": pin}}))
    return root


def test_integrity_verdicts_do_classify_the_verifiers_records() -> None:
    clean = {"error": None, "integrity": {"mode": "strict", "isolation": "snapshot", "paths": [], "survivors": []}}
    warned = {"error": None, "integrity": {"mode": "warn", "isolation": "live",
                                           "paths": ["/usr/local/bin/python3"], "survivors": []}}
    tampered = {"error": "tampered", "integrity": {"mode": "strict", "isolation": "snapshot",
                                                   "paths": ["/etc/ld.so.preload"], "survivors": []}}
    unchecked = {"error": None, "integrity": {"mode": "warn", "isolation": "in-place", "verdict": "unchecked"}}
    recorded = {"error": None, "integrity": {"mode": "warn", "isolation": "live", "verdict": "warning",
                                             "paths": [], "survivors": [], "notes": ["test.sh exited 1"]}}
    assert [sample_verdict(m) for m in (clean, warned, tampered, {"error": None}, None, unchecked, recorded)] == [
        "clean", "warning", "tampered", "unknown", "unknown", "unknown", "warning"]
    s = summarize([clean, clean, tampered])
    assert (s.mode, s.clean, s.tampered, s.warning, s.unknown) == ("strict", 2, 1, 0, 0)
    assert s.isolation == {"snapshot": 3} and s.strict
    assert summarize([clean, warned]).mode == "mixed"
    assert summarize([{"error": None}]).mode == "unknown" and not summarize([]).strict


@pytest.mark.docker
@pytest.mark.slow
def test_validate_log_rejects_an_agent_that_is_not_a_registered_harness(
        log_of, board: Path, tmp_path: Path) -> None:
    def renamed(log: EvalLog) -> None:
        # What `inspect eval --solver myorg/sneaky` records: the header, the plan and the spans.
        # (The task's own setup step, rsr/sandbox_guard, stays what it is.)
        log.eval.solver = next(s for s in log.plan.steps if s.solver != "rsr/sandbox_guard").solver = "myorg/sneaky"
        for sample in log.samples:
            for e in sample.events:
                if e.event == "span_begin" and e.type in ("solver", "agent") and e.name != "rsr/sandbox_guard":
                    e.name = "myorg/sneaky" if e.type == "solver" else "sneaky"

    bad = _rewritten(log_of("null"), tmp_path / "x.eval", renamed)
    with pytest.raises(LogValidationError, match=r"agent 'myorg/sneaky' is not a registered rsr harness"):
        validate_log(bad, load_board(board))
    allowing = _board(tmp_path / "allowing", harnesses=["myorg/sneaky"])
    assert validate_log(bad, load_board(allowing)).run.solver == "myorg/sneaky"


@pytest.mark.docker
@pytest.mark.slow
def test_validate_log_rejects_a_log_that_records_no_agent(log_of, board: Path, tmp_path: Path) -> None:
    def anonymous(log: EvalLog) -> None:
        log.eval.solver = None

    bad = _rewritten(log_of("null"), tmp_path / "x.eval", anonymous)
    with pytest.raises(LogValidationError, match=r"records no agent"):
        validate_log(bad, load_board(board))


@pytest.mark.docker
@pytest.mark.slow
def test_leaderboard_add_rejects_a_log_whose_agent_is_not_the_declared_harness(
        core_runs, log_of, board: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(["leaderboard", "add", str(core_runs["null"]), "--model-name", "n",
               "--harness", "terminus2", "--board", str(board)])
    assert rc == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "the log's agent is 'rsr/null', not the declared harness 'rsr/terminus2'" in err
    assert not (board / "entries").exists() or not list((board / "entries").iterdir())
    with pytest.raises(RsrError, match="not the declared harness 'rsr/oracle'"):
        build_entry([validate_log(log_of("null"), load_board(board))], model_name="n", harness="oracle")


@pytest.mark.docker
@pytest.mark.slow
def test_leaderboard_entry_does_record_unknown_integrity_for_logs_without_an_audit(
        core_runs, board: Path) -> None:
    # The session's logs predate the integrity audit only if the verifier records none; either
    # way every verified sample gets exactly one verdict.
    assert main(["leaderboard", "add", str(core_runs["scripted"]), "--model-name", "s",
                 "--harness", "terminus2", "--board", str(board)]) == 0
    (entry,) = load_entries(board / "entries")
    integrity = entry.suites["core"].integrity
    verified = 3  # hello-world x 3 epochs; semver-sort's samples errored before verification
    assert integrity.clean + integrity.warning + integrity.tampered + integrity.unknown == verified


@pytest.fixture(scope="module")
def strict_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `rsr/core` run of two tasks under `-T integrity=strict` (oracle, 1 epoch)."""
    from inspect_ai import eval as inspect_eval

    from rsr.harness.oracle import oracle
    from rsr.suites.inspect_tasks import core

    root = tmp_path_factory.mktemp("strict")
    logs = inspect_eval(core(tasks="hello-world,semver-sort", integrity="strict"), solver=oracle(),
                        model="mockllm/model", log_dir=str(root), display="none")
    assert logs[0].status == "success", logs[0].error
    (log,) = root.glob("*.eval")
    return log


@pytest.mark.docker
def test_strict_board_does_accept_a_strict_run_and_records_its_verdicts(
        strict_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    board = _board(tmp_path / "strict", min_epochs=1, integrity="strict")
    assert main(["leaderboard", "check", str(strict_run), "--board", str(board)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "integrity strict: 2 clean, 0 warning, 0 tampered, 0 live-state, 0 unknown" in printed
    assert main(["leaderboard", "add", str(strict_run), "--model-name", "o", "--harness", "oracle",
                 "--board", str(board)]) == 0
    (entry,) = load_entries(board / "entries")
    integrity = entry.suites["core"].integrity
    assert (integrity.mode, integrity.clean, integrity.tampered, integrity.unknown) == ("strict", 2, 0, 0)
    assert integrity.isolation == {"snapshot": 2}


@pytest.mark.docker
@pytest.mark.slow
def test_strict_board_rejects_logs_not_verified_under_strict_integrity(
        log_of, tmp_path: Path) -> None:
    board = _board(tmp_path / "strict", integrity="strict")

    def as_warn(log: EvalLog) -> None:
        for s in log.samples or []:
            integrity = (s.scores["verifier"].metadata or {}).get("integrity")
            if integrity:
                integrity["mode"] = "warn"

    warn = _rewritten(log_of("oracle"), tmp_path / "warn.eval", as_warn)
    with pytest.raises(LogValidationError, match=r"requires strict integrity.*rerun with -T integrity=strict"):
        validate_log(warn, load_board(board))


def _read_host_side(log: EvalLog, txt: str | None = None) -> None:
    """The log as a verifier that reads the reward files from the host records it: no reward
    read by exec in the sandbox, an info event with the files instead."""
    from inspect_ai.event import InfoEvent

    for s in log.samples or []:
        metrics = (s.scores["verifier"].metadata or {}).get("metrics") or {}
        events = [e for e in s.events if not (e.event == "sandbox" and "reward" in (e.cmd or ""))]
        at = next(i for i, e in enumerate(events) if e.event == "score")
        files = {"reward.txt": txt if txt is not None else f"{metrics.get('reward', 0):g}\n", "reward.json": None}
        events.insert(at, InfoEvent(source="rsr/verifier", data={"reward_files": files}))
        s.events = events


@pytest.mark.docker
@pytest.mark.slow
def test_validate_log_does_accept_reward_files_recorded_by_a_host_side_verifier(
        log_of, board: Path, tmp_path: Path) -> None:
    ok = _rewritten(log_of("oracle"), tmp_path / "host.eval", _read_host_side)
    assert validate_log(ok, load_board(board)).run.solver == "rsr/oracle"

    def forged(log: EvalLog) -> None:  # the files said 0, the metadata and value say 1
        _read_host_side(log, txt="0\n")

    bad = _rewritten(log_of("oracle"), tmp_path / "forged.eval", forged)
    with pytest.raises(LogValidationError, match=r"differ from the reward file the verifier read"):
        validate_log(bad, load_board(board))


@pytest.mark.docker
@pytest.mark.slow
def test_validate_log_rejects_a_sample_verified_in_a_weaker_isolation_than_its_task_declares(
        log_of, board: Path, tmp_path: Path) -> None:
    def live(log: EvalLog) -> None:  # core tasks declare snapshot isolation (the default)
        sample = log.samples[0]
        sample.scores["verifier"].metadata["integrity"] = {
            "mode": "strict", "isolation": "live", "verdict": "clean", "paths": [], "survivors": []}

    bad = _rewritten(log_of("oracle"), tmp_path / "live.eval", live)
    with pytest.raises(LogValidationError, match=r"verified in isolation 'live', but the task declares 'snapshot'"):
        validate_log(bad, load_board(board))
