"""Two self-improvement rounds end to end (examples/rounds-smoke.yaml): real Docker sandboxes,
the real factory stages, real tiny SFT on CPU, each round's checkpoint served by vLLM (the
engine environment, started and stopped by rsr) and evaluated through Inspect. Round 1's
rollouts come from the scripted models; round 2's from the round-1 checkpoint on the engine.
One run, several promises."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from inspect_ai.log import read_eval_log

from rsr.cli.main import main
from rsr.rounds.ledger import RoundRow, read_ledger

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "examples" / "rounds-smoke.yaml"
EVAL_TASKS = {"semver-sort", "markdown-toc"}


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory, engine_env: object) -> Path:
    pytest.importorskip("trl")
    out = tmp_path_factory.mktemp("rounds-smoke")
    assert main(["rounds", str(SMOKE), "--output-dir", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def ledger(out: Path) -> list[RoundRow]:
    return read_ledger(out / "ledger.jsonl")


def _weights_sha(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(folder.glob("*.safetensors")):
        h.update(f.read_bytes())
    return h.hexdigest()


def _logs(folder: Path) -> list:
    return [read_eval_log(str(p)) for p in sorted(folder.glob("*.eval"))]


def test_rounds_ledger_has_one_row_per_round_with_the_funnel_cost_loss_and_pass_rate(
        out: Path, ledger: list[RoundRow]) -> None:
    assert [r.round for r in ledger] == [1, 2]
    one, two = ledger
    # Round 1 is the factory smoke (scripted models): its funnel is the factory's own.
    assert one.rollouts == {"discover": 9, "execute": 7}
    assert one.sources == 4 and one.kept == 2 and one.rows == 2 and one.training_rows == 2
    assert one.trained and one.train["train_loss_end"] < one.train["train_loss_start"]
    assert one.tokens > 0 and one.sandbox_minutes > 0
    # Round 2: the tiny policy solves nothing, so no new rows; it trains again on round 1's.
    assert two.rollouts == {"discover": 9} and two.sources == 0 and two.rows == 0
    assert two.trained and two.training_rows == 2 and "SFT on 2 row(s)" in two.train_note
    # It started from round 1's checkpoint: the same probe rows score what round 1 ended at.
    assert two.train["train_loss_start"] == pytest.approx(one.train["train_loss_end"], rel=1e-4)
    assert two.train["train_loss_end"] < two.train["train_loss_start"]
    for row in ledger:
        assert row.eval.n == len(EVAL_TASKS) and row.eval.reused_from is None
        assert row.eval.pass_rate == row.eval.passed / row.eval.n
        assert row.wall_s > 0
    md = (out / "ledger.md").read_text()
    assert md.count("\n| 1 |") == 1 and md.count("\n| 2 |") == 1
    assert (out / "pass_rate.png").stat().st_size > 0


def test_round_two_rollouts_were_generated_by_the_round_one_checkpoint(
        out: Path, ledger: list[RoundRow]) -> None:
    one, two = ledger
    assert one.model_out == str((out / "round-1" / "train" / "final").resolve())
    assert two.model_in == one.model_out
    assert two.model_in_served_as == "rsr-vllm/rounds-smoke-r1"
    # The weights served during round 2's factory are the ones round 1 wrote.
    assert two.model_in_sha256 == _weights_sha(Path(one.model_out))
    discover = _logs(out / "round-2" / "factory" / "logs" / "discover")
    assert len(discover) == 3  # one per harness
    for log in discover:
        assert log.eval.model == "rsr-vllm/rounds-smoke-r1"
        for sample in log.samples or []:
            assert set(sample.model_usage) == {"rsr-vllm/rounds-smoke-r1"}
            assert sample.model_usage["rsr-vllm/rounds-smoke-r1"].output_tokens > 0
    for log in _logs(out / "round-1" / "factory" / "logs" / "discover"):
        assert log.eval.model == "rsr-scripted/base"
    # The roles that are not the policy's stay on the factory config's models.
    fc = yaml.safe_load((out / "round-2" / "factory.yaml").read_text())
    assert fc["models"]["model"] == "rsr-vllm/rounds-smoke-r1"
    assert fc["models"]["roles"] == {"planner": "rsr-scripted/planner",
                                     "critic": "rsr-scripted/critic",
                                     "executor": "rsr-vllm/rounds-smoke-r1",
                                     "auditor": "rsr-scripted/auditor"}
    # Round 2 trained from round 1's checkpoint (init: previous), on round 1's export.
    recipe = yaml.safe_load((out / "round-2" / "train.yaml").read_text())
    assert recipe["model"]["path"] == one.model_out and recipe["model"]["tiny"] is None
    assert [d["name"] for d in recipe["data"]["datasets"]] == ["round-1"]
    # Each round's evaluation ran that round's checkpoint.
    for n in (1, 2):
        (log,) = _logs(out / f"round-{n}" / "eval")
        assert log.eval.model == f"rsr-vllm/rounds-smoke-r{n}"
        assert {s.metadata["task_name"] for s in log.samples or []} == EVAL_TASKS


def test_contamination_guard_covers_the_evaluated_tasks_in_every_round(
        out: Path, ledger: list[RoundRow]) -> None:
    for row in ledger:
        fc = yaml.safe_load((out / f"round-{row.round}" / "factory.yaml").read_text())
        guarded = {Path(p).name for p in fc["export"]["eval_paths"]}
        assert EVAL_TASKS <= guarded and "eval-tasks" in guarded
        checked = {Path(label.removeprefix("path:")).name for label in row.guard_checked}
        assert EVAL_TASKS <= checked  # the export compared every row with them
        rows = [json.loads(line) for line in
                (out / f"round-{row.round}" / "factory" / "dataset.jsonl").read_text().splitlines()]
        assert not {r["task"] for r in rows} & EVAL_TASKS
    # Round 1 has a task that copies an evaluation task (examples/factory-smoke/eval-tasks):
    # the guard refused its rows.
    one = ledger[0]
    assert set(one.refused_tasks) == {"largest-files-report"}
    assert one.refused_rows["direct-sft"] == 1 and sum(one.refused_rows.values()) >= 1
    # Round 2's policy passed nothing, so no row reached the guard (recorded as such).
    assert ledger[1].refused_tasks == {} and sum(ledger[1].refused_rows.values()) == 0


def test_rerun_does_no_new_work(out: Path, ledger: list[RoundRow],
                                capsys: pytest.CaptureFixture[str]) -> None:
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()
              and p.name != "ledger.md" and p.name != "pass_rate.png"}
    started = time.monotonic()
    assert main(["rounds", str(SMOKE), "--output-dir", str(out)]) == 0
    assert time.monotonic() - started < 60
    after = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()
             and p.name != "ledger.md" and p.name != "pass_rate.png"}
    assert after == before
    printed = capsys.readouterr().out
    assert "round 1: in the ledger, skipped" in printed and "round 2: in the ledger" in printed


def test_a_round_cut_off_before_its_ledger_row_resumes_from_its_finished_stages(
        out: Path, ledger: list[RoundRow], capsys: pytest.CaptureFixture[str]) -> None:
    path = out / "ledger.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n")  # round 2 finished every stage but was not recorded
    factory_logs = sorted((out / "round-2" / "factory" / "logs").rglob("*.eval"))
    assert main(["rounds", str(SMOKE), "--output-dir", str(out)]) == 0
    assert sorted((out / "round-2" / "factory" / "logs").rglob("*.eval")) == factory_logs
    again = read_ledger(path)
    assert [r.round for r in again] == [1, 2]
    assert again[1].model_dump(exclude={"wall_s"}) == ledger[1].model_dump(exclude={"wall_s"})
    assert "round 2 factory" not in capsys.readouterr().out


def test_rounds_status_reports_the_finished_rounds(out: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rounds", "status", str(SMOKE), "--output-dir", str(out)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["done"] == [1, 2] and status["next"] is None
    assert status["rounds_detail"]["1"]["rows"] == 2



def test_each_rounds_checkpoint_is_served_by_the_engine_rsr_started_and_stopped(
        out: Path, ledger: list[RoundRow], engine_env) -> None:
    one, two = ledger
    version = f"{engine_env.record.distribution} {engine_env.record.engine_version}"
    r1, r2 = (_weights_sha(out / f"round-{n}" / "train" / "final") for n in (1, 2))
    # Round 2's rollouts and both evaluations came from vLLM, on the weights each round wrote.
    assert two.model_in_engine.startswith(version) and two.model_in_sha256 == r1
    assert one.eval.engine.startswith(version) and one.eval.weights_sha256 == r1
    assert two.eval.engine.startswith(version) and two.eval.weights_sha256 == r2
    assert one.model_in_engine is None  # round 1: the factory config's scripted models
    assert f"in: {version} `{r1[:12]}`" in (out / "ledger.md").read_text()
    # One server for round 1's evaluation and round 2's factory (same checkpoint): the same
    # URL in both logs; a second one for round 2's checkpoint, each with its engine log.
    (eval1,) = _logs(out / "round-1" / "eval")
    (eval2,) = _logs(out / "round-2" / "eval")
    discover2 = _logs(out / "round-2" / "factory" / "logs" / "discover")
    assert {log.eval.model_base_url for log in discover2} == {eval1.eval.model_base_url}
    assert eval2.eval.model_base_url != eval1.eval.model_base_url
    assert sorted(p.name for p in (out / "engine").iterdir()) == [
        "vllm-rounds-smoke-r1.log", "vllm-rounds-smoke-r2.log"]
    # Stopped when the rounds ended: no engine process is left serving either checkpoint.
    ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert "rounds-smoke-r1" not in ps and "rounds-smoke-r2" not in ps
