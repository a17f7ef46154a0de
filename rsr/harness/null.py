"""`rsr/null`: does nothing. A task that this agent passes has tests that check nothing."""

from __future__ import annotations

from inspect_ai.agent import Agent, AgentState, agent

from rsr.harness.steps import stepwise


@agent
def null() -> Agent:
    """Leave the sandbox untouched."""

    async def execute(state: AgentState) -> AgentState:
        return state

    return stepwise(execute)
