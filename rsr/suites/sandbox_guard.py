"""Refuse an eval-level `--sandbox` that would replace the sandbox a task defines.

Inspect's `--sandbox PROVIDER` overrides every sample's sandbox; a sample config it cannot
carry over (rsr-docker's) is dropped, so the sample would run in Inspect's default image or on
the host (`local`), and the hidden tests with it. This setup step runs in each sample's
sandbox before the agent and stops the sample with the reason instead.

It is also where a sample whose sandbox could not start (rsr.sandbox.infra) ends: it marks the
sample completed, so no solver after it runs (whichever `--solver` the run uses), and the
scorer scores the infrastructure error.
"""

from __future__ import annotations

from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from rsr.errors import RsrError
from rsr.sandbox.infra import infra_error_of

SANDBOX_TYPE_KEY = "sandbox_type"
"""Sample metadata: the provider the task's sample asked for."""


def _provider(env: object) -> str:
    from inspect_ai._util.registry import registry_info

    env = getattr(env, "_sandbox", env)  # sandbox() hands out an event-recording proxy
    try:
        name = registry_info(type(env)).name
    except Exception:  # not a registered provider: name it by its class
        return type(env).__name__
    return name.split("/")[-1]  # `inspect_ai/local`, `rsr/rsr-docker`: the name --sandbox takes


def _docker_compatible(provider: str) -> bool:
    from inspect_ai.util._sandbox.compose import is_docker_compatible_sandbox_type

    try:
        return is_docker_compatible_sandbox_type(provider)
    except Exception:
        return False


def check_provider(expected: str, actual: str) -> None:
    """Raise unless a sample asking for `expected` may run in `actual`."""
    if actual == expected or (expected == "docker" and _docker_compatible(actual)):
        return
    raise RsrError(
        f"this sample's sandbox is {actual!r}, but its task defines {expected!r}: Inspect's "
        f"`--sandbox {actual}` replaces the task's image, limits and network (and would run "
        "the hidden tests there). Drop --sandbox; rsr chooses per task with "
        "-T sandbox=docker|compose|k8s."
    )


@solver(name="sandbox_guard")
def sandbox_guard() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        failed = infra_error_of(sandbox())
        if failed is not None:
            from inspect_ai.log import transcript

            transcript().info(f"no agent run: infrastructure error ({failed.kind}): {failed}",
                              source="rsr/infra")
            state.completed = True  # Inspect's plan stops here; the scorer reads the error
            return state
        expected = (state.metadata or {}).get(SANDBOX_TYPE_KEY)
        if expected:
            check_provider(str(expected), _provider(sandbox()))
        return state

    return solve
