"""rsr/statem and rsr/rsrt on real core tasks in Docker, with a scripted model."""

from __future__ import annotations

import pytest
from harness_scripted import CORE, WRITE_HELLO, WRITE_WRONG, kinds, output, passed, reply, run
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model
from inspect_ai.solver import SolverSpec

from rsr.harness.control import turn_meta
from rsr.harness.rsrt import rsrt
from rsr.harness.statem import statem
from rsr.harness.terminus2 import IDENTICAL_REFUSALS, STORE_RESULT, STORE_SETTINGS, terminus2

pytestmark = pytest.mark.docker


def test_statem_refuses_done_until_verification_output_was_seen():
    sample = run(statem(wait_mode="adaptive"), [
        reply(("ls /app\n", 0.5), next_state="understand"),
        reply(next_state="plan", plan="write the file, then cat it"),
        reply(WRITE_HELLO, next_state="act"),
        reply(next_state="done", complete=True),            # refused: nothing verified
        reply(("cat /app/hello.txt\n", 0.5), next_state="verify"),
        reply(next_state="done", complete=True),            # accepted: verify output seen
        reply(next_state="done", complete=True),            # confirmation
    ])
    refusal = sample.messages[8]
    assert "move to done refused" in refusal.text
    assert "task_complete ignored" in refusal.text
    assert turn_meta(refusal).public is not None
    assert "[workflow]" not in turn_meta(refusal).public
    result = sample.store[STORE_RESULT]
    assert result["refusals"] == 1 and result["final_state"] == "done"
    assert [s for s, _ in result["state_history"]] == ["understand", "plan", "act", "verify",
                                                       "done"]
    assert passed(sample) == 1.0


def test_statem_refused_move_types_nothing_and_the_run_fails():
    sample = run(statem(wait_mode="adaptive", max_episodes=2), [
        reply(WRITE_HELLO, next_state="act"),               # skipping plan: refused
        reply(next_state="done", complete=True),
    ])
    texts = [m.text for m in sample.messages if m.role == "user"]
    assert any("understand -> act is not an allowed move" in t and "nothing was typed" in t
               for t in texts)
    result = sample.store[STORE_RESULT]
    assert result["final_state"] == "understand" and result["end_reason"] == "max_episodes"
    assert passed(sample) == 0.0


def test_statem_stops_when_the_readme_fixture_repeats_a_refused_completion():
    # The README's fixture never names a next state: its completion is refused in every turn,
    # and the same reply repeats (before: 200 refusals, 401 messages, 2.0 M tokens).
    model = get_model("rsr-scripted/agent",
                      fixture=str(CORE.parents[1] / "examples/scripted/hello-world.yaml"))
    sample = run(statem(wait_mode="adaptive"), [], model=model)
    result = sample.store[STORE_RESULT]
    assert result["end_reason"] == "repeated_refusal"
    assert result["turns"] == 2 + IDENTICAL_REFUSALS
    assert len(sample.messages) < 20
    notes = [sample.attachments.get(e.data.removeprefix("attachment://"), e.data)
             for e in sample.events if e.event == "info" and isinstance(e.data, str)]
    assert any("same refused reply 5 times in a row" in n and "task_complete ignored" in n
               for n in notes)
    score = next(iter(sample.scores.values()))
    assert score.metadata["agent_end_reason"] == "repeated_refusal"
    assert passed(sample) == 1.0  # the file was written in the first turn


def test_terminus2_stops_when_its_token_budget_is_spent():
    # Each scripted call costs 240 tokens: the budget of 500 is spent after the third.
    sample = run(terminus2(wait_mode="adaptive", token_budget=500),
                 [reply(("ls /app\n", 0.2)) for _ in range(10)])
    result = sample.store[STORE_RESULT]
    assert result["end_reason"] == "token_budget"
    assert result["turns"] == 3 and result["tokens_used"] == 720
    assert passed(sample) == 0.0


def test_statem_state_survives_summarisation():
    script = iter([
        reply(next_state="plan", plan="write then check"),
        # ~10 kB of listing (the observation cap) fills the context and forces a hand-off
        reply(("ls -la /usr/lib/x86_64-linux-gnu\n", 0.5), next_state="act"),
        reply(WRITE_HELLO, next_state="act"),
        reply(("cat /app/hello.txt\n", 0.5), next_state="verify"),
        reply(next_state="done", complete=True),
        reply(next_state="done", complete=True),
    ])

    def generate(messages, tools, tool_choice, config):
        size = sum(len(m.text) for m in messages)
        if "hand-over summary" in messages[-1].text:
            return output("Planned; listed /usr/lib; nothing written yet.", size // 4)
        if "questions" in messages[-1].text or "operator who takes over" in messages[-1].text:
            return output("none", size // 4)
        return output(next(script), size // 4)

    sample = run(statem(wait_mode="adaptive", context_window=4000, summarise_free_tokens=1000),
                 generate)
    found = kinds(sample)
    handoff = sample.messages[found.index("handoff")]
    assert "[workflow] state: act" in handoff.text and "next_state" in handoff.text
    result = sample.store[STORE_RESULT]
    assert result["compactions"] and result["final_state"] == "done"
    assert passed(sample) == 1.0


def test_rsrt_reflects_after_failed_hidden_verification_then_passes():
    sample = run(rsrt(wait_mode="adaptive", max_reflections=2), [
        reply(WRITE_WRONG), reply(complete=True), reply(complete=True),
        # after the reflection prompt: the agent's own container has no tests in it
        reply(("ls /tests /logs/verifier; echo listed\n", 1.0)),
        reply(WRITE_HELLO), reply(complete=True), reply(complete=True),
    ])
    found = kinds(sample)
    assert found.count("reflection") == 1
    reflection = sample.messages[found.index("reflection")]
    assert "FAILED" in reflection.text
    listing = sample.messages[found.index("reflection") + 2].text
    assert "No such file or directory" in listing and "listed" in listing
    everything = "\n".join(m.text for m in sample.messages)
    assert "test_hello" not in everything and "expected 'Hello, world!'" not in everything
    result = sample.store[STORE_RESULT]
    assert [v["passed"] for v in result["verifications"]] == [False, True]
    assert result["end_reason"] == "verified"
    assert passed(sample) == 1.0


def test_rsrt_budget_stops_the_run_and_the_sample_is_scored():
    sample = run(rsrt(wait_mode="fixed", budget_minutes=0.08), [
        reply(("sleep 30\n", 25.0)), reply(WRITE_HELLO), reply(complete=True)])
    assert sample.error is None
    result = sample.store[STORE_RESULT]
    assert result["end_reason"] == "agent_timeout" and result["elapsed_sec"] < 15
    assert passed(sample) == 0.0


def test_rsrt_stops_at_reflection_limit_and_is_scored():
    sample = run(rsrt(wait_mode="adaptive", max_reflections=0), [
        reply(WRITE_WRONG), reply(complete=True), reply(complete=True)])
    result = sample.store[STORE_RESULT]
    assert result["end_reason"] == "reflection_limit"
    assert "reflection" not in kinds(sample)
    assert passed(sample) == 0.0


def test_rsrt_verifies_when_episodes_run_out_then_reflects_and_passes():
    sample = run(rsrt(wait_mode="adaptive", max_episodes=1, max_reflections=1), [
        reply(WRITE_WRONG),     # the only episode: exhausted, verified in a copy, fails
        reply(WRITE_HELLO),     # a fresh episode after the reflection prompt
    ])
    result = sample.store[STORE_RESULT]
    assert [(v["trigger"], v["passed"]) for v in result["verifications"]] == \
        [("max_episodes", False), ("max_episodes", True)]
    assert result["end_reason"] == "verified"
    assert kinds(sample).count("reflection") == 1
    assert passed(sample) == 1.0


@pytest.mark.parametrize("name,args,end_reason", [
    ("rsr/statem", {"max_episodes": 1}, "max_episodes"),
    ("rsr/rsrt", {"budget_minutes": 180, "max_episodes": 1, "max_reflections": 0}, "verified"),
])
def test_harness_runs_by_registered_name_with_cli_args(tmp_path, name, args, end_reason):
    model = get_model("mockllm/model", custom_outputs=[output(reply(WRITE_HELLO,
                                                                     next_state="plan"))])
    args = {**args, "wait_mode": "adaptive"}  # as `--solver NAME -S key=value`
    logs = inspect_eval("rsr/core", task_args={"tasks": "hello-world"},
                        solver=SolverSpec(name, args, args_passed=args), model=model,
                        display="none", log_dir=str(tmp_path))
    sample = logs[0].samples[0]
    settings = sample.store[STORE_SETTINGS]
    assert logs[0].eval.solver == name and settings["harness"] == name.removeprefix("rsr/")
    assert all(settings[key] == value for key, value in args.items())
    assert sample.store[STORE_RESULT]["end_reason"] == end_reason


SKILL_SCRIPT = "python3 /skills/region-totals/scripts/totals.py /app/sales.csv /app/report.json\n"


@pytest.mark.parametrize("harness", ["statem", "rsrt"])
def test_harness_lists_the_task_skills_in_its_first_prompt_and_solves_with_one(harness):
    from parity import TEST_TASKS

    if harness == "statem":
        agent, script = statem(wait_mode="adaptive"), [
            reply(next_state="understand"), reply(next_state="plan"),
            reply(SKILL_SCRIPT, next_state="act"),
            reply(("cat /app/report.json\n", 0.5), next_state="verify"),
            reply(next_state="done", complete=True), reply(next_state="done", complete=True)]
    else:
        agent, script = rsrt(wait_mode="adaptive"), [
            reply(SKILL_SCRIPT), reply(complete=True), reply(complete=True)]
    sample = run(agent, script, root=TEST_TASKS, tasks="skills-report")
    first = sample.messages[0].text
    assert first.count("<skill>") == 2
    assert "<location>/skills/region-totals/SKILL.md</location>" in first
    assert passed(sample) == 1.0
