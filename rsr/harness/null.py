"""`rsr/null`: does nothing. A task that this agent passes has tests that check nothing."""

from __future__ import annotations

from typing import Any

from inspect_ai.agent import Agent, AgentState, agent

from rsr.harness.steps import stepwise
from rsr.options import check_options


@agent
def null(**options: Any) -> Agent:
    """Leave the sandbox untouched."""
    check_options("rsr/null", "-S", null, locals())

    async def execute(state: AgentState) -> AgentState:
        return state

    return stepwise(execute)
