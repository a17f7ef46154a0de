"""The engine container behind an Inspect sandbox, when there is one.

The verifier, the artifact collector and RSRT's hidden verification all reach past Inspect's
sandbox interface to the container itself (snapshots, archives, commits); this is how each
finds it.
"""

from __future__ import annotations

from typing import Any


async def container_of(sbx: Any) -> str | None:
    """The engine container behind a sandbox, when there is one."""
    # Inspect hands out its sandboxes wrapped in an event-logging proxy.
    sbx = getattr(sbx, "_sandbox", sbx)
    container = getattr(sbx, "container", None)
    if isinstance(container, str) and container:
        return container
    try:
        from inspect_ai.util._sandbox.docker.docker import DockerSandboxEnvironment
    except ImportError:  # pragma: no cover - Inspect without its docker provider
        return None
    if isinstance(sbx, DockerSandboxEnvironment):
        connection = await sbx.connection()
        return connection.container
    return None
