"""Which Inspect sandbox a task's samples get, and its configuration.

Single-container tasks use `rsr-docker` (our Engine-API provider); tasks that bring their own
compose file (sidecar services) keep Inspect's compose provider, fed by `rsr.sandbox.compose`.
"""

from __future__ import annotations

import logging

from inspect_ai.util import SandboxEnvironmentSpec

from rsr.errors import TaskFormatError
from rsr.sandbox.compose import image_tag, prebuilt_image, sandbox_network, write_compose_file
from rsr.sandbox.docker_api import SANDBOX_NAME, RsrDockerConfig
from rsr.sandbox.pull import DEFAULT_POLICY, check_policy
from rsr.tasks.load import LoadedTask
from rsr.tasks.models import expand_env

logger = logging.getLogger(__name__)


def uses_compose(task: LoadedTask, policy: str = DEFAULT_POLICY) -> bool:
    return task.user_compose_file() is not None and not prebuilt_image(task, policy)


def docker_config(task: LoadedTask, allow_internet: bool | None = None, bridge: bool | None = None,
                  policy: str = DEFAULT_POLICY) -> RsrDockerConfig:
    """`allow_internet`: the run's effective policy (default: the task's). Without a bridge on the
    engine an internet-enabled sample gets no network (never the host's: its loopback services
    would be exposed), as on the compose path. `policy`: the run's image policy (rsr.sandbox.pull)."""
    env = task.config.environment
    internet = env.allow_internet if allow_internet is None else allow_internet
    prebuilt = prebuilt_image(task, policy)
    dockerfile = task.build_context() / "Dockerfile"
    has_dockerfile = dockerfile.is_file()
    if not prebuilt and not has_dockerfile:
        raise TaskFormatError(dockerfile, None, "missing Dockerfile" + (
            " (-T images=force-build builds from it, not from docker_image)" if env.docker_image else ""))
    return RsrDockerConfig(
        task=task.name,
        image=prebuilt or image_tag(task),
        build_context=str(task.build_context()) if has_dockerfile else None,
        # auto: a prebuilt image whose pull fails is built from the Dockerfile under rsr's tag.
        build_image=image_tag(task) if prebuilt and has_dockerfile else None,
        image_policy=check_policy(policy),
        build_timeout_sec=env.build_timeout_sec,
        cpus=float(env.cpus),
        memory_mb=int(env.memory_mb),
        storage_mb=int(env.storage_mb) if env.storage_mb else None,
        network=sandbox_network(internet, bridge),  # type: ignore[arg-type]
        workdir=env.workdir,
        env={k: expand_env(v) for k, v in env.env.items()},
        gpus=int(env.gpus or 0),
    )


def sandbox_spec(task: LoadedTask, allow_internet: bool | None = None, bridge: bool | None = None,
                 policy: str = DEFAULT_POLICY) -> SandboxEnvironmentSpec:
    """The sandbox for one task's samples (see the module docstring)."""
    if uses_compose(task, policy):
        return SandboxEnvironmentSpec("docker", write_compose_file(task, allow_internet=allow_internet, bridge=bridge,
                                                                   force_build=policy == "force-build",
                                                                   never=policy == "never"))
    return SandboxEnvironmentSpec(SANDBOX_NAME, docker_config(task, allow_internet, bridge, policy))
