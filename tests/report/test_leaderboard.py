"""Leaderboard entries from real `.eval` logs; tampered and non-conforming logs rejected."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from inspect_ai.log import EvalLog, read_eval_log, recompute_metrics, write_eval_log

from rsr.cli.main import main
from rsr.report.leaderboard import (
    LeaderboardEntry,
    LogValidationError,
    load_board,
    load_entries,
    validate_log,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _tampered(src: Path, dest: Path, edit: Callable[[EvalLog], None]) -> Path:
    """Rewrite a log with Inspect's own API, as a forger would."""
    log = read_eval_log(str(src))
    edit(log)
    write_eval_log(log, str(dest))
    return dest


def _first_failing(log: EvalLog):  # noqa: ANN202 - an EvalSample
    return next(s for s in log.samples or [] if s.scores["verifier"].value["passed"] == 0)


def _raise_value(log: EvalLog) -> None:
    _first_failing(log).scores["verifier"].value = {"passed": 1.0, "reward": 1.0,
                                                    "process": 1.0}


def _raise_value_and_metadata(log: EvalLog) -> None:
    sample = _first_failing(log)
    _raise_value(log)
    sample.scores["verifier"].metadata["metrics"] = {"reward": 1.0}


def _raise_value_metadata_and_event(log: EvalLog) -> None:
    sample = _first_failing(log)
    _raise_value_and_metadata(log)
    for event in sample.events:
        if event.event == "score":
            event.score = sample.scores["verifier"].model_copy(deep=True)


def test_validate_log_does_accept_untouched_real_runs(log_of, board: Path) -> None:
    for label in ("oracle", "null", "scripted"):
        v = validate_log(log_of(label), load_board(board))
        assert v.run.benchmark == "core" and v.suite_digest.startswith("sha256:")


def test_validate_log_rejects_header_metrics_raised(log_of, board: Path, tmp_path) -> None:
    def edit(log: EvalLog) -> None:
        passed = next(s for s in log.results.scores if s.name == "passed")
        passed.metrics["mean"].value = 0.9

    bad = _tampered(log_of("null"), tmp_path / "x.eval", edit)
    with pytest.raises(LogValidationError, match=r"header: passed/-/mean = 0.9 but the "
                       r"samples give 0.0"):
        validate_log(bad, load_board(board))


@pytest.mark.parametrize("edit, evidence", [
    (_raise_value, "does not follow from the verifier's recorded reward metrics"),
    (_raise_value_and_metadata, "differ from the reward file the verifier read"),
    (_raise_value_metadata_and_event, "differ from the reward file the verifier read"),
])
def test_validate_log_rejects_sample_score_raised_with_consistent_header(
        log_of, board: Path, tmp_path: Path, edit, evidence: str) -> None:
    def forge(log: EvalLog) -> None:
        edit(log)
        recompute_metrics(log)  # the header now agrees with the forged sample

    bad = _tampered(log_of("null"), tmp_path / "x.eval", forge)
    with pytest.raises(LogValidationError, match=evidence):
        validate_log(bad, load_board(board))


def test_validate_log_rejects_missing_sample(log_of, board: Path, tmp_path: Path) -> None:
    def drop(log: EvalLog) -> None:
        log.samples = [s for s in log.samples if (s.id, s.epoch) != ("semver-sort", 2)]
        recompute_metrics(log)

    bad = _tampered(log_of("oracle"), tmp_path / "x.eval", drop)
    with pytest.raises(LogValidationError, match=r"1 sample\(s\) missing.*semver-sort#2"):
        validate_log(bad, load_board(board))


def test_validate_log_rejects_time_limit_and_agent_timeout_overrides(
        log_of, board: Path, tmp_path: Path) -> None:
    def override(log: EvalLog) -> None:
        log.eval.config.time_limit = 30
        log.eval.solver_args = {"agent_timeout_sec": 5}

    bad = _tampered(log_of("oracle"), tmp_path / "x.eval", override)
    with pytest.raises(LogValidationError) as e:
        validate_log(bad, load_board(board))
    text = str(e.value)
    assert "time_limit = 30 overrides" in text and "['agent_timeout_sec']" in text


def test_validate_log_rejects_too_few_epochs_under_tb2_style_rules(log_of, tmp_path) -> None:
    board = tmp_path / "b"
    board.mkdir()
    core = Path(__file__).resolve().parents[2] / "tasks" / "core"
    (board / "board.yaml").write_text(yaml.safe_dump({"suites": {"core": {
        "path": str(core), "tasks": ["hello-world", "semver-sort"], "min_epochs": 5}}}))
    with pytest.raises(LogValidationError, match="epochs = 3; core needs at least 5"):
        validate_log(log_of("oracle"), load_board(board))


def test_validate_log_rejects_task_set_not_matching_pinned_suite(log_of, tmp_path) -> None:
    board = tmp_path / "b"
    board.mkdir()
    core = Path(__file__).resolve().parents[2] / "tasks" / "core"
    (board / "board.yaml").write_text(yaml.safe_dump({"suites": {"core": {
        "path": str(core), "tasks": ["hello-world", "semver-sort", "pagination-bug"]}}}))
    with pytest.raises(LogValidationError, match=r"does not match the pinned suite.*"
                       r"missing tasks \['pagination-bug'\]"):
        validate_log(log_of("oracle"), load_board(board))


def test_leaderboard_cli_does_add_entries_build_page_and_readme(
        core_runs, log_of, board: Path, tmp_path: Path) -> None:
    for label, harness in (("oracle", "rsr/oracle"), ("null", "rsr/null"),
                           ("scripted", "terminus2")):
        rc = main(["leaderboard", "add", str(core_runs[label]), "--model-name", label,
                   "--harness", harness, "--board", str(board)])
        assert rc == 0
    forged = _tampered(log_of("null"), tmp_path / "forged.eval", _raise_value)
    assert main(["leaderboard", "add", str(forged), "--model-name", "forged",
                 "--harness", "null", "--board", str(board)]) == 2
    entries = {e.model_name: e for e in load_entries(board / "entries")}
    assert sorted(entries) == ["null", "oracle", "scripted"]
    scripted = entries["scripted"].suites["core"]
    # semver-sort's model API failed: scored failures counted as infra, not errors (rsr.verify.outcome).
    assert (scripted.metrics.mean, scripted.metrics.n_errors, scripted.metrics.n_infra) == (0.5, 0, 3)
    # The entry names what the model met: rsr's loop in rsr's own words, never "Harbor Terminus 2".
    interface = entries["scripted"].interface
    assert interface is not None and (interface.implementation, interface.prompt_pack) == ("rsr", "rsr")
    assert interface.prompt_pack_sha256 and "rsr wording" in interface.label
    assert "Terminus 2 wording" not in interface.label
    assert entries["oracle"].interface is None
    assert scripted.log.sha256.startswith("sha256:")
    LeaderboardEntry.model_validate_json((board / "entries" / "oracle-rsr-oracle.json")
                                         .read_text())

    site = tmp_path / "site"
    assert main(["leaderboard", "build", "--out", str(site), "--board", str(board)]) == 0
    readme = (board / "README.md").read_text()
    table = readme.split("<!-- leaderboard:start")[1]
    order = [line.split("|")[2].strip() for line in table.splitlines()
             if line.startswith("| ") and line[2].isdigit()]
    assert order == ["oracle", "scripted", "null"]
    # The scripted run set max_episodes: the page says so beside the harness.
    assert "terminus2 (non-default: max_episodes=4) (rsr implementation, rsr wording, Harbor parity)" in table
    assert (site / "plots" / "core.png").read_bytes()[:4] == b"\x89PNG"

    # Rebuilding keeps the hand-written part of the README.
    (board / "README.md").write_text("# Mine\n\nintro\n\n" + readme[readme.index("<!--"):])
    assert main(["leaderboard", "build", "--out", str(site), "--board", str(board)]) == 0
    assert (board / "README.md").read_text().startswith("# Mine\n\nintro")


def _dump_dom(browser: str, page: Path, fragment: str, profile: Path) -> str:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=2000",
           "--dump-dom", page.resolve().as_uri() + fragment]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=True).stdout


def _entry_order(dom: str) -> list[str]:
    import re

    return re.findall(r'<tr data-entry="([^"]+)"', dom)


def test_leaderboard_page_does_render_sorted_rows_in_headless_chromium(
        core_runs, board: Path, tmp_path: Path, chromium: str) -> None:
    for label, harness in (("null", "null"), ("oracle", "oracle"), ("scripted", "terminus2")):
        assert main(["leaderboard", "add", str(core_runs[label]), "--model-name", label,
                     "--harness", harness, "--board", str(board)]) == 0
    site = tmp_path / "site"
    assert main(["leaderboard", "build", "--out", str(site), "--board", str(board),
                 "--no-readme"]) == 0
    page = site / "index.html"
    # The HTML lists entries by id; only the page's script puts them in score order.
    assert _entry_order(page.read_text()) == ["null-null", "oracle-oracle", "scripted-terminus2"]

    dom = _dump_dom(chromium, page, "", tmp_path / "profile1")
    assert _entry_order(dom) == ["oracle-oracle", "scripted-terminus2", "null-null"]
    assert 'data-sorted="core-score:desc"' in dom
    assert "100.0% (95% CI 34.2–100.0)" in dom and "50.0% (95% CI 9.5–90.5)" in dom
    # Each entry's run report, read from its own logs (the oracle's two core samples, no model calls).
    report = dom[dom.index('<div class="run-report" data-entry="oracle-oracle">'):]
    report = report[:report.index("</div>")]
    assert "rollouts per hour" in report and "sandbox start p50 / p99" in report, report
    from inspect_ai.log import read_eval_log

    [log] = sorted(Path(core_runs["oracle"]).rglob("*.eval"))
    n = read_eval_log(str(log), header_only=True).results.total_samples
    assert f'samples (rollouts)</th><td class="text">{n} in 1 log(s)' in report, report
    assert "infra failures by kind</th><td class=\"text\">none" in report, report

    dom = _dump_dom(chromium, page, "#sort=model&dir=asc", tmp_path / "profile2")
    assert _entry_order(dom) == ["null-null", "oracle-oracle", "scripted-terminus2"]
    assert 'aria-sort="ascending"' in dom


def test_leaderboard_export_does_write_terminal_bench_submission_layout(
        core_runs, board: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    rc = main(["leaderboard", "export", str(core_runs["scripted"]), "--format",
               "terminal-bench", "--out", str(out), "--board", str(board),
               "--agent-name", "terminus-2", "--agent-url", "https://example.org/rsr",
               "--agent-display-name", "Terminus 2 (rsr)", "--agent-org", "rsr",
               "--model-display-name", "Mock", "--model-org", "Inspect"])
    assert rc == 0
    root = out / "submissions" / "terminal-bench" / "2.0" / "terminus-2__model"
    meta = yaml.safe_load((root / "metadata.yaml").read_text())
    assert meta["agent_display_name"] == "Terminus 2 (rsr)"
    assert meta["models"] == [{"model_name": "model", "model_provider": "mockllm",
                               "model_display_name": "Mock", "model_org_display_name":
                               "Inspect"}]
    (job,) = [p for p in root.iterdir() if p.is_dir()]
    config = json.loads((job / "config.json").read_text())
    assert config["timeout_multiplier"] == 1.0 and config["n_attempts"] == 3
    assert config["agents"][0]["override_timeout_sec"] is None
    trials = [json.loads(p.read_text()) for p in job.glob("*/result.json")]
    assert len(trials) == 6
    by_task: dict[str, list[dict]] = {}
    for t in trials:
        by_task.setdefault(t["task_name"], []).append(t)
        assert t["config"]["environment"]["override_cpus"] is None
        assert t["task_checksum"].startswith("sha256:")
    assert all(t["verifier_result"]["rewards"]["reward"] == 1.0
               for t in by_task["hello-world"])
    assert all(t["exception_info"] and t["verifier_result"] is None
               for t in by_task["semver-sort"])
    assert all((job / t["trial_name"] / "agent" / "messages.json").is_file() for t in trials)


def test_validate_log_rejects_suite_drifted_from_its_pinned_digest(log_of, tmp_path) -> None:
    from rsr.errors import RsrError

    board = tmp_path / "b"
    board.mkdir()
    core = Path(__file__).resolve().parents[2] / "tasks" / "core"
    (board / "board.yaml").write_text(yaml.safe_dump({"suites": {"core": {
        "path": str(core), "tasks": ["hello-world", "semver-sort"],
        "digest": "sha256:" + "0" * 64}}}))
    with pytest.raises(RsrError, match=r"suites.core.digest pins sha256:0+ but the tasks on "
                       r"disk give sha256:"):
        validate_log(log_of("oracle"), load_board(board))


def test_leaderboard_entry_does_carry_process_reward_of_a_long_horizon_suite(
        lhtb_run, tmp_path: Path) -> None:
    from rsr.report.leaderboard import build_entry

    board = tmp_path / "b"
    board.mkdir()
    (board / "board.yaml").write_text(yaml.safe_dump({"reference_agents": True, "suites": {
        "lhtb": {"path": str(lhtb_run["suite"])}}}))
    (log,) = lhtb_run["logs"].glob("*.eval")
    entry = build_entry([validate_log(log, load_board(board))], model_name="m", harness="oracle")
    m = entry.suites["lhtb"].metrics
    assert (m.process, m.mean, m.n_tasks, m.n_runs) == (0.5, 0.0, 1, 3)


def test_leaderboard_check_does_warn_while_the_suite_is_not_pinned(
        core_runs, board: Path, capsys: pytest.CaptureFixture) -> None:
    check = ["leaderboard", "check", str(core_runs["oracle"]), "--board", str(board)]
    assert main(check) == 0
    assert "suite 'core' is not pinned" in " ".join(capsys.readouterr().err.split())

    assert main(["leaderboard", "pin", "core", "--board", str(board)]) == 0
    digest = capsys.readouterr().out.strip()
    with (board / "board.yaml").open("a") as f:
        f.write(f"    digest: '{digest}'\n")
    assert main(check) == 0
    assert "not pinned" not in capsys.readouterr().err


def test_leaderboard_page_and_readme_do_show_process_reward_of_a_long_horizon_suite(
        lhtb_run, tmp_path: Path) -> None:
    board = tmp_path / "b"
    board.mkdir()
    (board / "board.yaml").write_text(yaml.safe_dump({"reference_agents": True, "suites": {
        "lhtb": {"path": str(lhtb_run["suite"])}}}))
    assert main(["leaderboard", "add", str(lhtb_run["logs"]), "--model-name", "m",
                 "--harness", "oracle", "--board", str(board)]) == 0
    site = tmp_path / "site"
    assert main(["leaderboard", "build", "--out", str(site), "--board", str(board)]) == 0
    readme = (board / "README.md").read_text()
    # Every run fails but earns half the milestones: the pass rate alone would say 0.
    assert "| # | model | harness | lhtb score | lhtb pass@3 | lhtb process | submitted |" in readme
    assert "| 1 | m | oracle | 0.0% (95% CI 0.0–79.3) | 0.0% | 0.50 |" in readme
    page = (site / "index.html").read_text()
    assert 'data-key="lhtb-process"' in page and "0.50 ± 0.00" in page


def test_validate_log_rejects_a_run_of_the_rsrt_feedback_harness(
        log_of, board: Path, tmp_path: Path) -> None:
    def as_rsrt(log: EvalLog) -> None:
        log.eval.solver = "rsr/rsrt"  # the header of an `inspect eval --solver rsr/rsrt` run

    bad = _tampered(log_of("scripted"), tmp_path / "x.eval", as_rsrt)
    with pytest.raises(LogValidationError, match=r"agent 'rsr/rsrt' runs the hidden tests"):
        validate_log(bad, load_board(board))


def test_validate_log_rejects_oracle_and_scripted_runs_unless_on_a_test_board(
        log_of, board: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "board.yaml").write_text((board / "board.yaml").read_text().replace(
        "reference_agents: true\n", ""))
    with pytest.raises(LogValidationError, match=r"agent 'rsr/oracle' runs the reference"):
        validate_log(log_of("oracle"), load_board(real))
    with pytest.raises(LogValidationError, match=r"model 'mockllm/model' replays scripted"):
        validate_log(log_of("scripted"), load_board(real))
    assert validate_log(log_of("oracle"), load_board(board)).run.solver == "rsr/oracle"


def test_leaderboard_pin_does_write_the_digest_into_board_yaml_and_dry_run_writes_nothing(
        board: Path, capsys: pytest.CaptureFixture) -> None:
    before = (board / "board.yaml").read_text()
    assert main(["leaderboard", "pin", "core", "--board", str(board), "--dry-run"]) == 0
    shown = capsys.readouterr().out
    assert (board / "board.yaml").read_text() == before
    assert main(["leaderboard", "pin", "core", "--board", str(board)]) == 0
    digest = capsys.readouterr().out.strip()
    after = (board / "board.yaml").read_text()
    assert after == shown and yaml.safe_load(after)["suites"]["core"]["digest"] == digest
    assert [line for line in before.splitlines() if line.lstrip().startswith("#")] == \
        [line for line in after.splitlines() if line.lstrip().startswith("#")]


def test_leaderboard_check_does_take_a_resumed_folder_with_the_killed_runs_started_log(
        core_runs, board: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import shutil

    from inspect_ai.log import read_eval_log, write_eval_log

    folder = tmp_path / "resumed"
    shutil.copytree(core_runs["oracle"], folder)
    finished = next(folder.glob("*.eval"))
    killed = read_eval_log(str(finished))
    killed.status, killed.results = "started", None
    write_eval_log(killed, str(folder / ("2000-01-01T00-00-00-00-00_" + finished.name.split("_", 1)[1])))
    assert main(["leaderboard", "check", str(folder), "--board", str(board)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert f"using {finished.name} (success); skipped 2000-01-01T00-00-00-00-00_" in err and "(started)" in err
