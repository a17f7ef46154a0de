"""`rsr/oracle`: runs the task's reference solution. Used to validate tasks.

The solution is copied into the sandbox only for this agent; no other agent ever sees it.
"""

from __future__ import annotations

import math
import time
from typing import Any

from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageAssistant
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util import sandbox, store

from rsr.harness.steps import current_task, stepwise
from rsr.options import check_options
from rsr.tasks.load import SOLUTION_MOUNT
from rsr.tasks.models import expand_env
from rsr.verify.scorer import HARNESS_RESULT
from rsr.verify.verifier import cap_output


def first_half(script: str) -> str:
    """The script up to (not including) the first command of its second half."""
    lines = script.splitlines()
    commands = [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")]
    if not commands:
        return script
    cut = commands[len(commands) // 2]
    return "\n".join(lines[:cut]) + "\n"


@agent
def oracle(partial: bool = False, **options: Any) -> Agent:
    """Run solution/solve.sh with the task's agent timeout and solution env.

    Args:
        partial: Run only the first half of solve.sh's commands (a *partial* oracle, used by
            `rsr tasks check` to show that the tests check the end state).
    """
    check_options("rsr/oracle", "-S", oracle, locals())

    async def execute(state: AgentState) -> AgentState:
        ts = sample_state()
        task = current_task(ts.metadata if ts else {})
        sbx = sandbox()
        files = task.solution_files()
        if f"{SOLUTION_MOUNT}/solve.sh" not in files:
            # Nothing to run: say so where the score is read, not only in the transcript.
            note = (f"rsr/oracle: task {task.name} has no solution/solve.sh (looked in "
                    f"{task.paths.solution_dir}): "
                    "nothing was run, so this score says nothing about the task's tests")
            store().set(HARNESS_RESULT, {"end_reason": "no_solution", "note": note})
            transcript().info(note, source="rsr/oracle")
            state.messages.append(ChatMessageAssistant(content=note, source="generate"))
            return state
        if partial:
            key = f"{SOLUTION_MOUNT}/solve.sh"
            files[key] = first_half(files[key].decode(errors="replace")).encode()
        await sbx.exec(["mkdir", "-p", SOLUTION_MOUNT], user="root")
        for path, content in files.items():
            await sbx.write_file(path, content)
        env = {k: expand_env(v) for k, v in task.config.solution.env.items()}
        timeout = max(1, int(math.ceil(task.config.agent.timeout_sec)))
        started = time.monotonic()
        try:
            result = await sbx.exec(["bash", "-c", task.solution_command()], env=env,
                                    cwd=task.workdir, timeout=timeout, timeout_retry=False,
                                    user=task.config.agent.user)
            summary = f"solve.sh exited {result.returncode}\n" + cap_output(result.stdout + result.stderr)
        except TimeoutError:
            summary = f"solve.sh timed out after {timeout}s"
        finally:
            # Leave nothing of the solution behind for the verifier to stumble on.
            await sbx.exec(["rm", "-rf", SOLUTION_MOUNT], user="root")
        transcript().info(f"oracle ({time.monotonic() - started:.1f}s): {summary}")
        state.messages.append(ChatMessageAssistant(content=summary, source="generate"))
        return state

    return stepwise(execute)
