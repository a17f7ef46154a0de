"""`rsr tasks shell`'s agent: hand the sample's sandbox to a person, as the agent would get it.

It optionally runs the reference solution first (the oracle), then attaches an interactive shell
to the sandbox (`docker exec -it ... bash -l`, the sandbox's own connection command) and returns
when that shell exits; the ordinary scorer (the hidden tests) may run afterwards.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys

from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.util import sandbox

from rsr.harness.oracle import oracle


def _attach(command: str) -> int:
    argv = shlex.split(command)
    if not sys.stdin.isatty():  # piped input (scripts, tests): no TTY to allocate
        argv = [a for a in argv if a != "-it"]
        argv.insert(argv.index("exec") + 1, "-i")
    return subprocess.call(argv)


@agent
def shell(run_oracle: bool = False) -> Agent:
    """Attach a shell to the sandbox (after the reference solution when `run_oracle`)."""

    async def execute(state: AgentState) -> AgentState:
        if run_oracle:
            state = await oracle()(state)
            print(f"oracle: {state.messages[-1].text.splitlines()[0]}", flush=True)
        connection = await sandbox().connection()
        print(f"sandbox {connection.container}: exit the shell to end (`{connection.command}`)",
              flush=True)
        await asyncio.to_thread(_attach, connection.command)
        return state

    return execute
