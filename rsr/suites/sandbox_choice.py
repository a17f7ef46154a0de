"""Which sandbox a sample runs in: the one place `-T sandbox=...` and the factory's
`sandbox:` key are turned into an Inspect sandbox spec."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from inspect_ai.util import SandboxEnvironmentSpec

from rsr.errors import RsrError
from rsr.sandbox.compose import write_compose_file
from rsr.sandbox.images import ImageMap, find_image_map
from rsr.sandbox.pull import DEFAULT_POLICY, check_policy
from rsr.sandbox.spec import sandbox_spec as docker_sandbox_spec
from rsr.tasks.load import LoadedTask

SandboxKind = Literal["docker", "compose", "k8s"]
SANDBOX_KINDS: tuple[str, ...] = get_args(SandboxKind)


def check_kind(kind: str) -> SandboxKind:
    if kind not in SANDBOX_KINDS:
        raise RsrError(f"sandbox={kind!r}: expected one of {', '.join(SANDBOX_KINDS)}")
    return kind  # type: ignore[return-value]


def sandbox_spec(task: LoadedTask, kind: str = "docker", images: ImageMap | str | Path | None = None, *,
                 allow_internet: bool | None = None, bridge: bool | None = None,
                 policy: str = DEFAULT_POLICY) -> SandboxEnvironmentSpec:
    """The sandbox of one task's samples.

    docker: this machine's engine, through `rsr-docker` for single-container tasks and Inspect's
    compose provider for tasks with their own compose file; compose: Inspect's compose
    provider for every task (the previous path, kept for comparison). k8s: Helm values for the
    inspect-k8s-sandbox chart, pulling the images recorded by `rsr images build --push`
    (`images` is that map, its path or registry; default: $RSR_K8S_IMAGES or the only map
    in the cache). `policy`: the run's image policy (rsr.sandbox.pull); under k8s the cluster
    pulls every image, and force-build maps each task to the image built from its Dockerfile.
    """
    chosen = check_kind(kind)
    force_build = check_policy(policy) == "force-build"
    if chosen == "docker":
        return docker_sandbox_spec(task, allow_internet=allow_internet, bridge=bridge, policy=policy)
    if chosen == "compose":
        return SandboxEnvironmentSpec("docker", write_compose_file(task, allow_internet=allow_internet, bridge=bridge,
                                                                   force_build=force_build, never=policy == "never"))
    from rsr.sandbox.k8s_values import k8s_sandbox_spec  # needs the k8s extra only when chosen

    found = images if isinstance(images, ImageMap) else find_image_map(images)
    return k8s_sandbox_spec(task, found, force_build)
