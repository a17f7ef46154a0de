"""The filter's public-history checks and dedupe, on synthetic stage files (no Docker)."""

from __future__ import annotations

from pathlib import Path

from rsr.factory import filter as filter_stage
from rsr.factory.config import load_config
from rsr.factory.ledger import FactoryPaths
from rsr.factory.records import Attempt, Execution, Runbook, RunbookBody, Verdict, write_rows
from rsr.harness import prompts

BODY = RunbookBody(end_state="The report file lists every region with its total sales.",
                   milestones=["Group the rows by region before summing the amounts"])
PROMPT = "You are working in a terminal.\nYour task:\nDo it.\n\nCurrent terminal state:\n$ "
REPLY = '{"analysis": "a", "plan": "p", "commands": [], "task_complete": true}'


def _execution(eid: str, observation: str = "$ ls\nfile", passed: bool = True,
               reply_analysis: str = "a") -> Execution:
    reply = REPLY.replace('"analysis": "a"', f'"analysis": "{reply_analysis}"')
    return Execution(id=eid, runbook_id="s#k0", source_id="s", task="t", suite="core", index=0,
                     round=0, passed=passed, reward=float(passed), turns=1, tokens=1,
                     sandbox_seconds=1, log="l",
                     messages=[{"role": "user", "content": PROMPT},
                               {"role": "assistant", "content": reply},
                               {"role": "user", "content": observation}])


def test_filter_drops_duplicates_leaks_and_failures(tmp_path: Path) -> None:
    cfg_path = tmp_path / "factory.yaml"
    cfg_path.write_text("output_dir: out\npool: {suites: [core]}\nmodels: {model: m/x}\n"
                        "filter: {auditor: false}\n")
    cfg = load_config(cfg_path)
    paths = FactoryPaths(cfg.output_dir)
    write_rows(paths.stage_file("runbooks"), [Runbook(
        id="s#k0", source_id="s", task="t", candidate=0, accepted=True, body=BODY,
        attempts=[Attempt(round=1, raw="{}", body=BODY, verdict=Verdict(verdict="accept"))])])
    confirm = next(x for x in prompts.load(prompts.CONFIRM).splitlines() if "Are you sure" in x)
    write_rows(paths.stage_file("executions"), [
        _execution("a"),
        _execution("b"),                                   # same content as a
        _execution("c", "note: group the rows by region before summing the amounts"),
        _execution("d", f"$ ls\n{confirm}"),
        _execution("e", "$ ls\nother", passed=False),
        _execution("f", "$ ls\nsomething else"),
        _execution("g", "$ ls\nmore", reply_analysis="first group the rows by region before "
                                                         "summing the values"),
    ])
    decisions, _ = filter_stage.run(cfg, paths)
    by_id = {d.execution_id: d for d in decisions}
    assert by_id["a"].kept and by_id["f"].kept
    assert by_id["b"].reasons == ["exact duplicate of a"]
    assert by_id["c"].reasons[0].startswith("runbook text in the public history")
    assert by_id["d"].reasons[0].startswith("harness control (confirm) in the public history")
    assert by_id["e"].reasons == ["failed the verifier (reward 0)"]
    assert by_id["g"].reasons[0].startswith("runbook text (1 8-word run(s)) in the agent's replies")
