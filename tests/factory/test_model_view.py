"""`model_view`: a harness run as the contexts its model saw, split at hand-offs.

The summarised run is real: Terminus 2 in a Docker sandbox with a small context window, a
scripted model (tests/factory/fixtures/handoff-fixture.yaml) and a private guidance text, as
the factory's executor runs it. The rows must equal the model calls recorded in the log."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai.log import EvalSample

from rsr.harness import prompts
from rsr.harness.control import user_message
from rsr.trajectories.model_view import model_view

FIXTURES = Path(__file__).parent / "fixtures"
CORE = Path(__file__).resolve().parents[2] / "tasks" / "core"
GUIDANCE = "Private runbook: write the greeting with single quotes."


@pytest.fixture(scope="module")
def summarised(tmp_path_factory: pytest.TempPathFactory) -> EvalSample:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.agent import as_solver
    from inspect_ai.dataset import MemoryDataset
    from inspect_ai.log import read_eval_log

    import rsr.factory.scripted  # noqa: F401  (registers rsr-scripted)
    from rsr.harness.terminus2 import terminus2
    from rsr.suites.inspect_tasks import task_sample
    from rsr.tasks.load import load_task
    from rsr.verify.scorer import verifier

    sample = task_sample(load_task(CORE / "hello-world"), "core")
    agent = terminus2(max_episodes=6, wait_mode="adaptive", context_window=1500,
                      summarise_free_tokens=700, private_guidance=GUIDANCE)
    logs = inspect_eval(Task(dataset=MemoryDataset([sample]), solver=as_solver(agent),
                             scorer=verifier()),
                        model="rsr-scripted/executor",
                        model_args={"fixture": str(FIXTURES / "handoff-fixture.yaml")},
                        display="none", log_dir=str(tmp_path_factory.mktemp("logs")))
    # Read back from disk, as the factory does: what is compared is what the log recorded.
    sample = read_eval_log(logs[0].location, resolve_attachments=True).samples[0]
    sample.metadata = {**(sample.metadata or {}), "log_location": logs[0].location}
    return sample


@pytest.mark.docker
def test_model_view_rows_equal_every_logged_model_call_of_a_summarised_run(
        summarised: EvalSample) -> None:
    compactions = len(summarised.store["rsr_harness_result"]["compactions"])
    assert summarised.error is None and compactions
    view = model_view(summarised)
    # One context before the first hand-off, one after each (summary, questions, answers each).
    handoffs = view.summarisation_calls // 3
    assert handoffs >= compactions and view.summarisation_calls == 3 * handoffs
    assert [s.handoff for s in view.segments] == [False] + [True] * handoffs
    calls = [e for e in summarised.events if e.event == "model"]
    covered = unhomed = 0
    for call in calls:
        assert call.input[0].role == "system" and call.input[0].text == GUIDANCE
        sent = [{"role": m.role, "content": m.text} for m in call.input[1:]]
        reply = {"role": "assistant", "content": call.output.completion}
        homes = [s for s in view.segments if s.messages[:len(sent) + 1] == [*sent, reply]]
        # Every call is either one segment's next turn, or a summarisation pass (summary,
        # questions, answers), which is a context of its own and in no training row.
        assert len(homes) <= 1, sent[-1]["content"][:80]
        covered += len(homes)
        unhomed += not homes
    assert unhomed == view.summarisation_calls
    replies = sum(m["role"] == "assistant" for s in view.segments for m in s.messages)
    # Each hand-off context opens with the questions its model asked (the questions call's reply).
    assert covered == replies - handoffs
    assert all(GUIDANCE not in m["content"] for s in view.segments for m in s.messages)


@pytest.mark.docker
def test_trajectories_export_terminus2_view_writes_one_row_per_context(
        summarised: EvalSample, tmp_path: Path) -> None:
    import json

    from rsr.trajectories.export import export_logs

    log = Path(summarised.metadata["log_location"])
    export_logs([log], "messages", tmp_path, "passed", view="terminus2")
    rows = [json.loads(x) for x in (tmp_path / "messages.jsonl").read_text().splitlines()]
    view = model_view(summarised)
    n = len(view.segments)
    assert n >= 2
    assert [(r["segment"], r["segments"], r["handoff"]) for r in rows] == [(i, n, i > 0) for i in range(n)]
    assert [r["messages"] for r in rows] == [s.messages for s in view.segments]


def test_model_view_strips_statem_control_but_keeps_terminus2_warning_and_confirm() -> None:
    warning = prompts.render(prompts.PARSE_WARNING, warnings="extra text after the JSON "
                                                            "object was ignored").rstrip("\n")
    display = prompts.render(prompts.STATEM_DISPLAY, state="act", history="plan>act",
                             allowed="act, verify").rstrip("\n")
    observation = "root@4e5f6a7b8c9d:/app# make\nmake: Nothing to be done for 'all'.\n"
    first = user_message("FIRST\n\nSTATEM RULES\n\n" + display, "first_prompt", "statem",
                         turn=0, public="FIRST", control_parts=["STATEM RULES", display],
                         control=False)
    mixed = user_message("\n\n".join([observation.rstrip("\n"), warning, display]),
                         "state_display", "statem", turn=1, public=observation,
                         control_parts=[warning, display], control=True)
    confirm_text = prompts.render(prompts.CONFIRM,
                                  terminal_state=observation.rstrip("\n")).rstrip("\n")
    confirm = user_message("\n\n".join([confirm_text, display]), "confirm", "statem", turn=2,
                           public=observation, control_parts=[confirm_text, display],
                           control=True)
    from inspect_ai.model import ChatMessageAssistant

    reply = ChatMessageAssistant(content="{}")
    messages = [first, reply, mixed, reply, confirm, reply]
    view = model_view(messages)
    got = [m["content"] for m in view.segments[0].messages if m["role"] == "user"]
    # Exactly what Terminus 2 itself writes in these places.
    assert got == ["FIRST", "\n\n".join([observation.rstrip("\n"), warning]), confirm_text]
    assert {r.kind for r in view.removed} == {"first_prompt", "state_display", "confirm"}
    raw = model_view(messages, strip_source_control=False)
    assert raw.segments[0].messages[2]["content"] == mixed.text


def test_model_view_keeps_the_reasoning_a_reply_carried() -> None:
    from inspect_ai.model import ChatMessageAssistant, ContentReasoning, ContentText

    first = user_message("FIRST", "first_prompt", "terminus2", turn=0, control=False)
    reply = ChatMessageAssistant(content=[ContentReasoning(reasoning="The file is missing."),
                                          ContentText(text='{"analysis": "a"}')])
    row = model_view([first, reply]).segments[0].messages[1]
    assert row == {"role": "assistant", "content": '{"analysis": "a"}',
                   "reasoning_content": "The file is missing."}
