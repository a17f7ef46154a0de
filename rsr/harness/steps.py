"""`stepwise(agent)`: any rsr harness on a multi-step task, one agent call per step.

Every rsr agent returns `stepwise(execute)`, so `--solver rsr/<any>` runs `[[steps]]` tasks as
Harbor does (one trial, sequential steps) without the harness knowing about steps: for a
single-step task the wrapper is a plain call. For a multi-step task the agent is called once
per step with a fresh conversation holding only that step's instruction, in the same sandbox
(Harbor calls `agent.run(instruction)` per step on the same environment); while it runs, the
sample metadata carries the step's agent timeout and name, and `current_task()` returns the
step's view of the task (its solution, timeout and user, for the oracle). What runs between the
calls (setup, collection, the step's tests, gating) is `rsr.verify.steps`. The conversation of
every step is kept, in order, in the sample's messages; the output is the last step's. A sample
whose sandbox did not start (rsr.sandbox.infra) runs no agent at all.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.agent import Agent, AgentState
from inspect_ai.model import ChatMessageUser
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util import store

from rsr.sandbox.infra import current_infra_error
from rsr.tasks.load import LoadedTask, task_from_metadata
from rsr.verify.steps import STORE_ARTIFACTS_DIR, STORE_CURRENT, STORE_STEPS, StepsRecord, run_steps


def current_task(metadata: dict[str, Any]) -> LoadedTask:
    """The task of the running sample, as the step now running sees it."""
    task = task_from_metadata(metadata)
    index = store().get(STORE_CURRENT)
    return task.for_step(index) if index is not None and task.config.steps else task


def stepwise(agent: Agent) -> Agent:
    """Wrap an agent so that multi-step tasks run step by step (see the module doc)."""

    async def execute(state: AgentState) -> AgentState:
        if current_infra_error() is not None:
            # No sandbox to act in (rsr.sandbox.infra): the task's setup step normally ends the
            # sample first; a task without it must not have the agent run blind either.
            return state
        ts = sample_state()
        metadata = ts.metadata if ts is not None else {}
        if not metadata.get("steps") or store().get(STORE_CURRENT) is not None:
            return await agent(state)  # single-step, or already inside a step (nested wrappers)
        from rsr.verify.artifacts import sample_artifacts_dir

        task = task_from_metadata(metadata)
        saved = {k: metadata[k] for k in ("agent_timeout_sec", "step") if k in metadata}
        messages: list[Any] = []

        async def run_agent(view: LoadedTask) -> None:
            metadata["agent_timeout_sec"] = view.config.agent.timeout_sec
            metadata["step"] = view.step_name
            store().set(STORE_CURRENT, view.step)
            try:
                step_state = await agent(AgentState(messages=[ChatMessageUser(content=view.instruction)]))
            finally:
                store().set(STORE_CURRENT, None)
                metadata.pop("step", None)
                metadata.update(saved)
            messages.extend(step_state.messages)
            state.output = step_state.output

        def save(record: StepsRecord) -> None:
            store().set(STORE_STEPS, record.model_dump())

        root = sample_artifacts_dir(task, getattr(ts, "uuid", None))
        store().set(STORE_ARTIFACTS_DIR, str(root))
        try:
            await run_steps(task, run_agent, artifacts_root=root, save=save,
                            integrity=metadata.get("integrity_policy") or "auto")
        finally:
            state.messages = messages or state.messages
        return state

    return execute
