"""Refuse an eval-level `--sandbox` that would replace the sandbox a task defines.

Inspect's `--sandbox PROVIDER` overrides every sample's sandbox; a sample config it cannot
carry over (rsr-docker's) is dropped, so the sample would run in Inspect's default image or on
the host (`local`), and the hidden tests with it. This setup step runs in each sample's
sandbox before the agent and stops the sample with the reason instead; it also records the
image the sample's rsr-docker container runs (`record_image`).

It is also where a sample whose sandbox could not start (rsr.sandbox.infra) ends: it marks the
sample completed, so no solver after it runs (whichever `--solver` the run uses), and the
scorer scores the infrastructure error.
"""

from __future__ import annotations

from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from rsr.errors import RsrError
from rsr.sandbox.infra import infra_error_of
from rsr.sandbox.pull import ResolvedImage

SANDBOX_TYPE_KEY = "sandbox_type"
"""Sample metadata: the provider the task's sample asked for."""
SETUP_KEY = "rsr_setup"
"""Sample metadata: the script that readies the sandbox before the agent (Harbor's log dirs, the
task's healthcheck), run here as root: an image whose last `USER` cannot write /tmp or /logs
(`USER nobody`) still gets them, and a failure is the environment's (infra `setup`)."""
SETUP_TIMEOUT = 600
IMAGE_KEY = "image"
"""Sample metadata (and store): the image the sample's container runs, as rsr-docker found,
pulled or built it (name, id, repo digest, source, policy)."""


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


async def record_image(state: TaskState) -> None:
    """Put the image the sample's container runs into its metadata and store, so the log says
    which image (by id and repo digest) each sample ran: as rsr-docker found, pulled or built
    it, or, under Inspect's compose provider, as the engine reports the container's image."""
    try:
        env = sandbox()
    except Exception:  # no sandbox (a task without one): nothing to record
        return
    image = getattr(getattr(env, "_sandbox", env), "image", None)
    if not isinstance(image, ResolvedImage):
        image = await _container_image(env, str(state.metadata.get("image_policy") or ""))
    if image is not None:
        state.metadata[IMAGE_KEY] = image.record()
        state.store.set(f"rsr:{IMAGE_KEY}", image.record())


async def _container_image(env: object, policy: str) -> ResolvedImage | None:
    import asyncio

    from rsr.sandbox import engine
    from rsr.sandbox.backing import container_of

    try:
        container = await container_of(env)
        if not container:
            return None
        info = await asyncio.to_thread(engine.api().inspect_container, container)
        found = await asyncio.to_thread(engine.api().inspect_image, info["Image"])
    except Exception:  # a provider without a local container (k8s): its image map records it
        return None
    return ResolvedImage(name=str(info["Config"]["Image"]), id=found["Id"],
                         repo_digests=list(found.get("RepoDigests") or []), source="compose", policy=policy)


async def run_setup(script: str) -> None:
    """Run the sample's setup script as root, before the agent; a failure (a healthcheck that
    never passes) ends the sample as infra `setup`: the agent has not run yet."""
    from rsr.sandbox.infra import InfraError, note_infra

    try:
        result = await sandbox().exec(["sh", "-c", script], user="root", timeout=SETUP_TIMEOUT)
    except TimeoutError:
        result = None
    if result is None or not result.success:
        why = "timed out" if result is None else (result.stderr.strip()[-500:] or f"exit {result.returncode}")
        error = InfraError(f"the sandbox's setup (log directories, the task's healthcheck) failed before the "
                           f"agent ran: {why}", kind="setup")
        note_infra(error)
        raise error


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
        live = getattr(sandbox(), "_sandbox", None)
        if hasattr(live, "raise_fate"):
            # Its container went away (or the engine did) while Inspect readied it: end the
            # sample now as infra (retried if the run allows), not after an agent ran into it.
            await live.raise_fate()
        await record_image(state)
        script = (state.metadata or {}).get(SETUP_KEY)
        if script:
            await run_setup(str(script))
        if hasattr(live, "begin_agent"):
            live.begin_agent()  # from here a container stopped from inside is the agent's doing
        return state

    return solve
