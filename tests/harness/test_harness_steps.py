"""A model-driven harness on a multi-step task: one conversation per step, one sandbox throughout
(oracle and null runs of multi-step tasks are compared with Harbor in test_harbor_parity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_scripted import CORE, kinds, output, reply
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import as_solver
from inspect_ai.model import get_model

from rsr.harness.terminus2 import STORE_SETTINGS, terminus2
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

TOML = """
schema_version = "1.4"
multi_step_reward_strategy = "final"
[task]
name = "test/two-steps"
[verifier]
timeout_sec = 60
[agent]
timeout_sec = 120
[environment]
cpus = 1
memory_mb = 512
allow_internet = false
workdir = "/app"
[[steps]]
name = "one"
[[steps]]
name = "two"
[steps.agent]
timeout_sec = 90
"""


def _task(tmp_path: Path) -> Path:
    d = tmp_path / "suite" / "two-steps"
    dockerfile = (CORE / "hello-world" / "environment" / "Dockerfile").read_text()
    files = {"task.toml": TOML, "environment/Dockerfile": dockerfile,
             "tests/test.sh": "if [ -e /app/one ] && [ -e /app/two ]; then echo 1; else echo 0; fi "
                              "> /logs/verifier/reward.txt\n",
             "steps/one/instruction.md": "Create the file /app/one.\n",
             "steps/two/instruction.md": "Create the file /app/two.\n"}
    for rel, text in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    return d.parent


def test_terminus2_does_get_one_conversation_per_step_in_one_sandbox(tmp_path: Path) -> None:
    script = [reply("touch /app/one\n"), reply(complete=True), reply(complete=True),
              reply("touch /app/two\n"), reply(complete=True), reply(complete=True)]
    model = get_model("mockllm/model", custom_outputs=[output(o) for o in script])
    logs = inspect_eval(tasks_task("harbor", _task(tmp_path), None, None), solver=as_solver(terminus2()),
                        model=model, display="none", log_dir=str(tmp_path / "logs"))
    sample = logs[0].samples[0]
    score = sample.scores["verifier"]
    # Step one's tests need both files (0), step two's pass only because /app/one is still there.
    assert [s["rewards"] for s in score.metadata["steps"]] == [{"reward": 0.0}, {"reward": 1.0}]
    assert score.value["passed"] == 1.0 and score.metadata["trial_rewards"] == {"reward": 1.0}
    firsts = [m.text for m, k in zip(sample.messages, kinds(sample), strict=True) if k == "first_prompt"]
    assert len(firsts) == 2
    assert "Create the file /app/one." in firsts[0] and "/app/two" not in firsts[0]
    assert "Create the file /app/two." in firsts[1]
    assert sample.store[STORE_SETTINGS]["agent_timeout_resolved_sec"] == 90  # the last step's own timeout
