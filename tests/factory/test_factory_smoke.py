"""The smoke example end to end: real Docker sandboxes, real tmux, real verifiers, scripted
models for every role (examples/factory-smoke/fixture.yaml). One run, several promises."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from inspect_ai.log import EvalSample, read_eval_log_samples

from rsr.cli.main import main
from rsr.factory.critique import _norm, source_control_lines
from rsr.factory.execute import guidance_text
from rsr.factory.ledger import FactoryPaths
from rsr.factory.records import Decision, Execution, Runbook, Source, read_rows
from rsr.harness.terminus2 import STORE_SETTINGS

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "examples" / "factory-smoke.yaml"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("factory-smoke")
    assert main(["factory", "run", str(SMOKE), "--output-dir", str(out)]) == 0
    return out


def _samples(log_dir: Path) -> Iterator[EvalSample]:
    for log in sorted(log_dir.glob("*.eval")):
        yield from read_eval_log_samples(log, all_samples_required=False, resolve_attachments=True)


def _runbooks(out: Path) -> dict[str, Runbook]:
    return {r.id: r for r in read_rows(FactoryPaths(out).stage_file("runbooks"), Runbook)}


def _decisions(out: Path) -> dict[str, Decision]:
    return {d.execution_id: d for d in read_rows(FactoryPaths(out).stage_file("decisions"), Decision)}


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]


def test_smoke_discovery_records_complementary_harnesses(out: Path) -> None:
    report = json.loads((out / "report" / "report.json").read_text())
    comp = report["complementarity"]
    assert comp["solved_tasks"] == {"rsrt": ["hello-world", "largest-files-report"],
                                    "statem": ["git-recover-lost-work"],
                                    "terminus2": ["hello-world"]}
    assert comp["union"] == 3 and comp["best_single"] == 2
    assert (out / "report" / "upset.png").is_file()


def test_smoke_compression_strips_source_control_and_keeps_terminus2_messages(out: Path) -> None:
    sources = {s.id: s for s in read_rows(FactoryPaths(out).stage_file("sources"), Source)}
    rsrt = sources["rsrt~largest-files-report~e1"]
    assert "reflection" in {d["kind"] for d in rsrt.dropped}
    assert "confirm" not in {d["kind"] for d in rsrt.dropped}
    text = "\n".join(m["content"] for m in rsrt.messages)
    assert "FAILED (attempt" not in text and "Are you sure?" in text
    raw = "\n".join(m["content"] for g in rsrt.raw_segments for m in g.messages)
    assert "FAILED (attempt" in raw  # the Direct SFT form keeps what the model saw
    statem = sources["statem~git-recover-lost-work~e1"]
    assert "[workflow]" not in "\n".join(m["content"] for m in statem.messages)
    assert "next_state" not in statem.messages[0]["content"]
    assert any(d["kind"] == "state_display" for d in statem.dropped)
    assert "[workflow]" in "\n".join(m["content"] for g in statem.raw_segments
                                     for m in g.messages)


def test_smoke_runbook_quoting_hidden_test_is_rejected_then_revised(out: Path) -> None:
    runbook = _runbooks(out)["statem~git-recover-lost-work~e1#k0"]
    first, second = runbook.attempts
    assert first.verdict.verdict == "reject" and first.verdict.stage == "deterministic"
    assert "verifier leakage: 'check.py' (name of hidden test file tests/check.py)" in \
        first.verdict.reasons
    assert any("59f60e776126616d2cf7655fcee7cbf549e18e54" in r for r in first.verdict.reasons)
    assert second.verdict.verdict == "accept" and runbook.accepted
    assert "59f60e77" not in runbook.body.render()


def test_smoke_model_critic_rejection_is_fed_back_to_the_planner(out: Path) -> None:
    runbook = _runbooks(out)["terminus2~hello-world~e1#k1"]
    first, second = runbook.attempts
    assert first.verdict.stage == "model" and first.verdict.verdict == "reject"
    assert "grader" in first.verdict.reasons[0]
    assert second.verdict.verdict == "accept"
    sample = next(s for s in _samples(out / "logs" / "plan") if s.id == runbook.id)
    planner_calls = [e for e in sample.events if e.event == "model" and e.role == "planner"]
    assert len(planner_calls) == 2
    assert first.verdict.reasons[0] in planner_calls[1].input[-1].text
    # The critic sees only the public task and the runbook, not the source trajectory.
    critic_calls = [e for e in sample.events if e.event == "model" and e.role == "critic"]
    assert all("Successful trajectory" not in m.text for e in critic_calls for m in e.input)


def test_smoke_runbook_leaking_the_solution_is_never_accepted(out: Path) -> None:
    runbook = _runbooks(out)["rsrt~largest-files-report~e1#k1"]
    assert not runbook.accepted and len(runbook.attempts) == 2
    assert all("reference solution solution/solve.sh" in " ".join(a.verdict.reasons)
               for a in runbook.attempts)


def test_smoke_execution_failing_the_verifier_is_dropped(out: Path) -> None:
    decision = _decisions(out)["rsrt~largest-files-report~e1#k0#m0"]
    assert not decision.kept and decision.reasons == ["failed the verifier (reward 0)"]


def test_smoke_execution_typing_a_hidden_commit_id_is_dropped_by_the_reply_scan(
        out: Path) -> None:
    decision = _decisions(out)["statem~git-recover-lost-work~e1#k0#m0"]
    executions = {e.id: e for e in read_rows(FactoryPaths(out).stage_file("executions"), Execution)}
    assert executions[decision.execution_id].passed  # the verifier alone would have kept it
    assert not decision.kept
    # The deterministic scan finds it without any model: the id of tests/check.py was typed
    # before any terminal output had shown it.
    assert any(r.startswith("verifier leakage in a reply: '59f60e776126616d2cf7655fcee7cbf549e1"
                            "8e54'") and "typed before any output showed it" in r
               for r in decision.reasons), decision.reasons
    # (The scripted auditor's mark is recorded too; that only shows its verdict is used.)
    assert decision.underived[0]["value"] == "59f60e776126616d2cf7655fcee7cbf549e18e54"
    assert all(row["execution_id"] != decision.execution_id for row in _rows(out))


def _as_dicts(messages: list) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.text} for m in messages]


def test_smoke_rows_equal_the_model_inputs_recorded_in_the_execution_logs(out: Path) -> None:
    rows = _rows(out)
    runbooks = _runbooks(out)
    assert rows and {r["task"] for r in rows} == {"hello-world", "git-recover-lost-work"}
    samples = {str(s.id): s for s in _samples(out / "logs" / "execute")}
    for row in rows:
        sample = samples[row["execution_id"]]
        calls = [e for e in sample.events if e.event == "model"]
        messages = row["messages"]
        assert row["segments"] == 1 and not row["handoff"]
        # Every call's input, minus the private runbook (the one system message in front),
        # is the row's prefix, and the call's output is the row's next message.
        guidance = guidance_text(runbooks[row["runbook_id"]])
        for call in calls:
            assert call.input[0].role == "system" and call.input[0].text == guidance
            sent = _as_dicts(call.input[1:])
            assert messages[:len(sent)] == sent
            assert messages[len(sent)] == {"role": "assistant",
                                           "content": call.output.completion}
        last = _as_dicts(calls[-1].input[1:])
        assert messages == [*last, {"role": "assistant", "content": calls[-1].output.completion}]
        assert sum(m["role"] == "assistant" for m in messages) == len(calls)
        # Terminus 2's own confirmation stays; the runbook appears nowhere.
        text = "\n".join(m["content"] for m in messages)
        assert "Are you sure?" in text
        for line in runbooks[row["runbook_id"]].body.lines():
            assert _norm(line) not in _norm(text)
        assert not any(c in _norm(text) for c, _ in source_control_lines())
        for column in ("task", "suite", "source_harness", "source_trajectory", "runbook_id",
                       "execution_id", "reward", "turns", "tokens", "content_hash"):
            assert row[column] is not None, column
        assert row["reward"] == 1.0


def test_smoke_dedupe_drops_runs_that_differ_only_in_sandbox_noise(out: Path) -> None:
    decisions = _decisions(out)
    executions = {e.id: e for e in read_rows(FactoryPaths(out).stage_file("executions"), Execution)}
    hello = sorted(i for i in executions if "hello-world" in i)
    assert len(hello) == 4 and all(executions[i].passed for i in hello)
    # The four runs are not byte-identical: each sandbox has its own hostname in the prompt.
    assert len({executions[i].messages[0]["content"] for i in hello}) == 4
    kept = [i for i in hello if decisions[i].kept]
    assert len(kept) == 1
    for i in hello:
        if i not in kept:
            assert decisions[i].duplicate == "normalized" and decisions[i].duplicate_of == kept[0]
    card = (out / "DATASET_CARD.md").read_text()
    assert "| after normalisation | 3 |" in card


def test_smoke_runbook_reached_the_executor_only_privately(out: Path) -> None:
    runbooks = _runbooks(out)
    sample = next(s for s in _samples(out / "logs" / "execute")
                  if s.id == "statem~git-recover-lost-work~e1#k1#m0")
    calls = [e for e in sample.events if e.event == "model"]
    guidance = runbooks["statem~git-recover-lost-work~e1#k1"].body.end_state
    assert all(e.input[0].role == "system" and guidance in e.input[0].text for e in calls)
    assert all(guidance not in m.text for m in sample.messages)
    # The harness settings in the log pin the guidance by digest, not by text.
    settings = sample.store[STORE_SETTINGS]
    text = guidance_text(runbooks["statem~git-recover-lost-work~e1#k1"])
    assert settings["private_guidance_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert "private_guidance" not in settings


def test_smoke_contamination_guard_refuses_the_eval_copy(out: Path) -> None:
    assert all(r["task"] != "largest-files-report" for r in _rows(out))
    card = (out / "DATASET_CARD.md").read_text()
    assert "largest-files-report" in card and "disk-report" in card
    # Suites that are not on this machine are named as unchecked, not shown as clean.
    assert "**Not checked**" in card and "tb2, tb2_1, tb3" in card
    direct = [json.loads(x) for x in (out / "baselines" / "direct-sft.jsonl").read_text().splitlines()]
    assert {r["source_harness"] for r in direct} == {"terminus2", "rsrt", "statem"}
    assert all(r["task"] != "largest-files-report" for r in direct)


def test_smoke_direct_sft_keeps_source_control_and_its_stripped_variant_does_not(
        out: Path) -> None:
    def load(name: str) -> dict[str, dict]:
        rows = [json.loads(x) for x in (out / "baselines" / f"{name}.jsonl").read_text().splitlines()]
        return {r["source_harness"]: r for r in rows}

    direct, stripped = load("direct-sft"), load("direct-sft-stripped")
    statem = "\n".join(m["content"] for m in direct["statem"]["messages"])
    assert "[workflow] state:" in statem and "next_state" in statem
    clean = "\n".join(m["content"] for m in stripped["statem"]["messages"])
    assert "[workflow]" not in clean and "next_state" not in stripped["statem"]["messages"][0][
        "content"]
    assert "Are you sure?" in clean  # Terminus 2's own confirmation is not control
    assert direct["terminus2"]["messages"] == stripped["terminus2"]["messages"]


def test_smoke_dataset_is_saved_for_training(out: Path) -> None:
    import datasets

    from rsr.training.data import validate_row

    ds = datasets.load_from_disk(str(out / "dataset"))
    rows = _rows(out)
    assert len(ds) == len(rows) == 2  # 2 kept after dedupe; the refused task had none kept
    for i, row in enumerate(rows):
        validate_row(row, out / "dataset.jsonl", i)
    assert "Funnel" in (out / "dataset" / "README.md").read_text()


def test_smoke_adaptive_execution_and_status(out: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["factory", "status", str(SMOKE), "--output-dir", str(out)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["remaining"] == []
    adaptive = status["adaptive"]
    assert (adaptive["planned"], adaptive["executed"], adaptive["saved"]) == (14, 7, 7)
    # Both stop rules fired, counting kept trajectories (after the auditor and dedupe), not
    # verifier passes: the Terminus 2 source's runs all passed but were duplicates.
    assert adaptive["stopped"]["rsrt~largest-files-report~e1#k0"] == \
        "stopped before execution 1: 1 consecutive executions not kept"
    assert adaptive["stopped"]["terminus2~hello-world~e1#k0"] == \
        "stopped before execution 1: 1 consecutive executions not kept"
    assert adaptive["stopped"]["rsrt~hello-world~e1#k0"] == \
        "stopped before execution 1: source has 1 kept trajectories"
    assert adaptive["rollouts_per_kept_adaptive"] == round(7 / 2, 3)
    f = status["funnel"]
    assert (f["rollouts"], f["sources"], f["runbooks"], f["accepted"], f["executions"],
            f["passed"], f["kept"]) == (9, 4, 8, 7, 7, 6, 2)
    assert status["costs"]["per_kept"]["rollouts"] == round(16 / 2, 3)


def test_smoke_report_cli_writes_every_section_and_the_baselines(
        out: Path, capsys: pytest.CaptureFixture) -> None:
    import datasets

    assert main(["factory", "report", str(SMOKE), "--output-dir", str(out)]) == 0
    md = capsys.readouterr().out
    for heading in ("## Harness complementarity", "## Funnel", "### Per source (case studies)",
                    "## Command similarity", "## Adaptive execution", "## Cost",
                    "## Definitions", "## Contamination guard"):
        assert heading in md, heading
    assert "Median turns: sources 4, kept rewrites 3.5." in md
    assert "**command_order_similarity**: longest common subsequence" in md
    assert md == (out / "report" / "report.md").read_text() + "\n"
    assert len(datasets.Dataset.from_parquet(str(out / "dataset.parquet"))) == len(_rows(out))
    direct = [json.loads(x) for x in
              (out / "baselines" / "terminus2-direct.jsonl").read_text().splitlines()]
    assert [(r["source_harness"], r["task"]) for r in direct] == [("terminus2", "hello-world")]
