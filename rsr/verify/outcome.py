"""How a sample ended, before its tests run: the one place a started sample's failure is classified.

Every sample of an rsr task reaches the `rsr/verifier` scorer: normally after its agent, and,
because rsr's tasks set Inspect's `score_on_error`, also after an error on its last attempt
(earlier attempts are retried by `retry_on_error` and logged in the sample's `error_retries`).
`sample_ending` says whether the tests can run and, if not, whose failure it is:

- infrastructure (`infra`, counted apart, never decided by anything the agent wrote): the
  sandbox never started (rsr.sandbox.infra), its container was stopped from outside or the
  engine went away (the engine's record, rsr.sandbox.fate), the model's API failed (Inspect's
  record of the call; not a request it refused for its content or length, which is the
  agent's), the host's disk filled (the host's free space, and only when the agent's
  own container did not write the space away);
- the agent's (`failure`, a 0 in both numbers): its container was stopped for memory or from
  inside (its PID 1 made to exit, with no stop from the engine: rsr.sandbox.stops), or the
  sample ended in an error none of the above explains (a harness or solver crash).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

from rsr.sandbox.infra import DiskFullError, InfraError, current_infra_error, noted_infra

AGENT_WROTE_MB = 256
"""An agent whose container wrote more than this may itself have filled a disk it shares with
Docker's data: a full disk is then not counted as infrastructure."""


REQUEST_REJECTED = re.compile(
    r"context length|context window|context_length|maximum context|too many tokens|"
    r"prompt is too long|bad request|invalid_request|"
    # An HTTP 400 as a status, never a bare number: a port (127.0.0.1:34001) or a token count
    # in a connection or timeout message is no refusal.
    r"(?:error code|status code|status_code|http)\W{0,3}400\b", re.IGNORECASE)
"""A model call that failed on what the agent sent, not on the provider: never infrastructure."""


def request_rejected(model_error: str) -> bool:
    return REQUEST_REJECTED.search(model_error) is not None


@dataclass(frozen=True)
class Ending:
    """`infra`: not the agent's doing; `failure` (an error code): the agent's, with `message`."""

    infra: InfraError | None = None
    failure: str | None = None
    message: str = ""


class ModelApiError(InfraError):
    kind = "model"


def sample_error_message() -> str | None:
    """The error this sample's attempt ended with, as Inspect recorded it before scoring."""
    from inspect_ai.log import transcript

    for event in reversed(transcript().events):
        if event.event == "error":
            return str(getattr(event.error, "message", "") or "error")
    return None


def _model_failure() -> str | None:
    """The error of the sample's last model call, when that call failed (Inspect's record)."""
    from inspect_ai.event._model import CANCEL_ERRORS
    from inspect_ai.log import transcript

    for event in reversed(transcript().events):
        if event.event == "model":
            error = getattr(event, "error", None)
            return str(error) if error and error not in CANCEL_ERRORS else None
    return None


def _sandbox_flag(name: str) -> bool:
    """A flag rsr's sandbox keeps about the sample (False outside one, or for another sandbox)."""
    from inspect_ai.util import sandbox

    try:
        env = sandbox()
    except Exception:
        return False
    return bool(getattr(getattr(env, "_sandbox", env), name, None))


def _agent_began() -> bool:
    """Whether the sample's agent started (rsr.suites.sandbox_guard marks the sandbox)."""
    return _sandbox_flag("agent_began")


def _storage_exceeded() -> bool:
    return _sandbox_flag("storage_exceeded")


async def _container() -> str | None:
    """The engine container of the sample's sandbox (rsr-docker's, or Inspect's compose one)."""
    from inspect_ai.util import sandbox

    from rsr.sandbox.backing import container_of

    try:
        return await container_of(sandbox())
    except Exception:  # no sandbox (a finished log, a task without one), or its connection is gone
        return None


def _log_dir() -> Path | None:
    from inspect_ai.log._samples import sample_active

    location = getattr(sample_active(), "log_location", None)
    return Path(location).parent if location and "://" not in str(location) else None


def agent_wrote_much(container: str | None) -> bool:
    """Whether the agent's container wrote enough to have filled a disk itself."""
    from rsr.sandbox import engine

    if not container:
        return False
    try:
        return engine.writable_bytes(container) / 2**20 > AGENT_WROTE_MB
    except Exception:  # noqa: BLE001 - the container is gone: its layer is too
        return False


def disk_full(container: str | None) -> DiskFullError | None:
    """The host's disk, if a filesystem the run writes to is full and the agent did not fill it."""
    from rsr.sandbox.disk import docker_root, full_host_spaces

    docker = docker_root()
    full = full_host_spaces(_log_dir(), docker)
    if not full:
        return None
    if container and docker is not None:
        docker_device = next((s.device for s in full if s.role == "Docker data"), None)
        if docker_device is not None and any(s.device == docker_device for s in full) and agent_wrote_much(container):
            return None  # the agent's own writes may be what filled it
    return DiskFullError("no space left on the host: " + "; ".join(f"{s.role} {s.path}: {s.free_mb} MB free"
                                                                   for s in full))


async def sample_ending() -> Ending | None:
    """None: the agent finished and the tests should run; else why they cannot, and whose it is."""
    started = current_infra_error()
    if started is not None:
        return Ending(infra=started)
    error = sample_error_message()
    container = await _container()
    if _storage_exceeded():
        return None  # the storage watchdog stopped it: the verifier reports the agent's limit
    if container is not None:
        from rsr.sandbox.fate import container_fate

        fate = await asyncio.to_thread(container_fate, container, agent_began=_agent_began())
        if fate.oom:
            return Ending(failure="sandbox_oom", message=fate.oom)
        if fate.exited:
            return Ending(failure="sandbox_exited", message=fate.exited)
        if fate.infra is not None:
            noted = noted_infra()
            return Ending(infra=InfraError(noted["message"], noted["kind"]) if noted else fate.infra)
    if error is None:
        return None
    noted = noted_infra()
    if noted is not None and str(noted.get("message", ""))[:80] in error:
        return Ending(infra=InfraError(noted["message"], noted["kind"]))  # the error it ended with
    disk = await asyncio.to_thread(disk_full, container)
    if disk is not None:
        return Ending(infra=disk)
    model = _model_failure()
    if model is not None:
        if request_rejected(model):
            # The conversation itself was refused (too long, malformed): the agent's doing.
            return Ending(failure="model_request_rejected", message=model.splitlines()[0][:300])
        return Ending(infra=ModelApiError(f"the model's API failed: {model.splitlines()[0][:300]}"))
    return Ending(failure="sample_error", message=error)
