"""`rsr rehearse`: the Table 5 journey offline, once per module (about 20-40 s): a stand-in tb4
fetched by Harbor's downloader from loopback, `rsr eval table5` under rsr/oracle in real Docker
sandboxes with the real verifier, `rsr report table5`, a test board's pin and add, the site.

The checks are structural (steps, counts, rows) so that wording changes elsewhere do not break
them; the numbers checked are those the run must produce."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest
from harbor_ref import harbor_home

pytestmark = [pytest.mark.docker, pytest.mark.slow]

RUNNABLE = ["count-users", "write-greeting"]
GPU_TASK = "list-gpus"


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    from rsr.cli.main import main

    out = tmp_path_factory.mktemp("rehearsal") / "out"
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(buf):
        mp.setenv("RSR_HARBOR", str(harbor_home() / "bin" / "harbor"))
        rc = main(["rehearse", "--out", str(out)])
    return out, rc, buf.getvalue()


def test_rehearse_does_run_every_step_and_record_where_its_output_is(rehearsal: tuple[Path, int, str]) -> None:
    out, rc, printed = rehearsal
    summary = json.loads((out / "rehearsal.json").read_text())
    assert rc == 0 and summary["ok"], printed[-3000:]
    commands = [s["command"] for s in summary["steps"]]
    for sub in ("tasks fetch tb4 --source git://127.0.0.1:", "eval table5", "report table5",
                "leaderboard pin tb4", "leaderboard add", "leaderboard build"):
        assert sum(sub in c for c in commands) == 1, (sub, commands)
    for step in summary["steps"]:
        assert step["rc"] == 0 and step["command"] in printed
        for path in step["outputs"]:
            assert Path(path).exists(), (step["name"], path)
            assert path in printed


def test_rehearse_does_run_the_fetched_suite_in_sandboxes_and_mark_the_gpu_task_not_run(
        rehearsal: tuple[Path, int, str]) -> None:
    from rsr.report.logs import find_logs, read_run

    out, _, _ = rehearsal
    logs = find_logs([out / "logs" / "oracle"])
    assert len(logs) == 1  # only the fetched suite ran
    run = read_run(logs[0])
    assert run.benchmark == "tb4" and run.epochs == 3
    assert sorted({s.task_name for s in run.samples}) == RUNNABLE
    assert len(run.samples) == len(RUNNABLE) * 3
    # The reference solution under the real verifier: every sample scored and passed.
    assert all(s.scored and s.passed and not s.failed_to_run for s in run.samples)
    assert [(t["task"], t["reason"]) for t in run.not_run()] == [(GPU_TASK, "needs a GPU")]
    pin = json.loads((out / "tasks" / "tb4" / ".rsr-pin.json").read_text())
    meta = run.metadata
    assert meta["pin_status"] == "pinned" and meta["suite_digest"] == pin["digest"]
    assert (meta["pin_tool"], meta["pin_source"], meta["pin_ref"]) == (pin["tool"], pin["source"], "4.0.0")
    assert meta["pinned_task_digests"] == pin["tasks"]
    assert {s.task_digest for s in run.samples} <= set(pin["tasks"].values())


def test_rehearse_does_report_the_not_run_task_beside_the_score_and_unfetched_suites_as_missing(
        rehearsal: tuple[Path, int, str]) -> None:
    out, _, _ = rehearsal
    with (out / "report" / "table5.csv").open() as f:
        rows = {r["benchmark"]: r for r in csv.DictReader(f)}
    tb4 = rows.pop("tb4")
    assert tb4["status"] == "ok" and int(tb4["n_tasks"]) == len(RUNNABLE) and int(tb4["n_not_run"]) == 1
    assert float(tb4["mean"]) == 1.0 and int(tb4["solved"]) == len(RUNNABLE)
    assert rows and all(r["status"] == "missing" for r in rows.values())
    table = (out / "report" / "table5.md").read_text()
    tb4_lines = [line for line in table.splitlines() if line.startswith("| TB4")]
    assert tb4_lines and all("1 not run: needs a GPU" in line for line in tb4_lines)
    assert f"| {GPU_TASK} | not run: needs a GPU |" in table


def test_rehearse_does_add_one_entry_to_the_test_board_and_build_its_site(
        rehearsal: tuple[Path, int, str]) -> None:
    out, _, _ = rehearsal
    entries = sorted((out / "board" / "entries").glob("*.json"))
    assert len(entries) == 1
    entry = json.loads(entries[0].read_text())
    assert list(entry["suites"]) == ["tb4"]
    page = (out / "site" / "index.html").read_text()
    assert "reference solution (rehearsal)" in page


def test_leaderboard_check_rejects_a_log_whose_gpu_task_did_not_run_on_a_board_that_ranks_it(
        rehearsal: tuple[Path, int, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    from rsr.cli.main import main

    out, _, _ = rehearsal
    board = tmp_path / "board"
    board.mkdir()
    (board / "board.yaml").write_text("reference_agents: true\nsuites:\n  tb4: {}\n")
    monkeypatch.setenv("RSR_TASKS_HOME", str(out / "tasks"))
    assert main(["leaderboard", "check", str(out / "logs" / "oracle"), "--board", str(board)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"missing tasks ['{GPU_TASK} (not run: needs a GPU)']" in err


def test_rehearse_rejects_an_out_folder_that_is_not_an_earlier_rehearsals(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    from rsr.cli.main import main

    (tmp_path / "precious.txt").write_text("keep me\n")
    assert main(["rehearse", "--out", str(tmp_path)]) == 2
    assert "is not an earlier rehearsal's folder" in " ".join(capsys.readouterr().err.split())
    assert (tmp_path / "precious.txt").read_text() == "keep me\n"
