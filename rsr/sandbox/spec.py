"""Which Inspect sandbox a task's samples get, and its configuration.

Single-container tasks use `rsr-docker` (our Engine-API provider); tasks that bring their own
compose file (sidecar services) keep Inspect's compose provider, fed by `rsr.sandbox.compose`.
"""

from __future__ import annotations

import functools
import logging

from inspect_ai.util import SandboxEnvironmentSpec

from rsr.errors import TaskFormatError
from rsr.sandbox.compose import image_tag, write_compose_file
from rsr.sandbox.docker_api import SANDBOX_NAME, RsrDockerConfig
from rsr.tasks.load import LoadedTask
from rsr.tasks.models import expand_env

logger = logging.getLogger(__name__)


def uses_compose(task: LoadedTask) -> bool:
    return task.user_compose_file() is not None and not task.config.environment.docker_image


@functools.cache
def _engine_has_bridge() -> bool:
    from rsr.sandbox import engine

    try:
        return bool(engine.api().networks(names=["bridge"]))
    except Exception:  # noqa: BLE001 - no engine yet: the sandbox will report it when it starts
        return False


def internet_network_mode() -> str:
    """What an internet-enabled sample gets: the engine's bridge, or (engines started without
    one, as on our CI machines) the host's network."""
    if _engine_has_bridge():
        return "bridge"
    logger.warning("the Docker engine has no bridge network: internet-enabled samples use the host network")
    return "host"


def docker_config(task: LoadedTask, allow_internet: bool | None = None) -> RsrDockerConfig:
    env = task.config.environment
    internet = env.allow_internet if allow_internet is None else allow_internet
    build_context = None
    if not env.docker_image:
        if not (task.build_context() / "Dockerfile").is_file():
            raise TaskFormatError(task.build_context() / "Dockerfile", None, "missing Dockerfile")
        build_context = str(task.build_context())
    return RsrDockerConfig(
        task=task.name,
        image=env.docker_image or image_tag(task),
        build_context=build_context,
        build_timeout_sec=env.build_timeout_sec,
        cpus=float(env.cpus),
        memory_mb=int(env.memory_mb),
        storage_mb=int(env.storage_mb) if env.storage_mb else None,
        network=internet_network_mode() if internet else "none",
        workdir=env.workdir,
        env={k: expand_env(v) for k, v in env.env.items()},
        gpus=int(env.gpus or 0),
    )


def sandbox_spec(task: LoadedTask, allow_internet: bool | None = None) -> SandboxEnvironmentSpec:
    """The sandbox for one task's samples (see the module docstring)."""
    if uses_compose(task):
        return SandboxEnvironmentSpec("docker", write_compose_file(task))
    return SandboxEnvironmentSpec(SANDBOX_NAME, docker_config(task, allow_internet))
