"""rsr/statem and rsr/rsrt on real core tasks in Docker, with a scripted model."""

from __future__ import annotations

import pytest
from harness_scripted import WRITE_HELLO, WRITE_WRONG, kinds, passed, reply, run

from rsr.harness.control import turn_meta
from rsr.harness.rsrt import rsrt
from rsr.harness.statem import statem
from rsr.harness.terminus2 import STORE_RESULT

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


def test_statem_rejects_skipping_the_plan():
    sample = run(statem(wait_mode="adaptive", max_episodes=2), [
        reply(WRITE_HELLO, next_state="act"),
        reply(next_state="done", complete=True),
    ])
    texts = [m.text for m in sample.messages if m.role == "user"]
    assert any("understand -> act is not an allowed move" in t for t in texts)
    assert sample.store[STORE_RESULT]["final_state"] == "understand"


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


def test_rsrt_stops_at_reflection_limit_and_is_scored():
    sample = run(rsrt(wait_mode="adaptive", max_reflections=0), [
        reply(WRITE_WRONG), reply(complete=True), reply(complete=True)])
    result = sample.store[STORE_RESULT]
    assert result["end_reason"] == "reflection_limit"
    assert "reflection" not in kinds(sample)
    assert passed(sample) == 0.0
