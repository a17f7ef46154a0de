"""What became of a sample's container, read from the engine alone.

When a call into a sample's container fails, the cause decides who the failure belongs to:
a container stopped from outside (`docker kill`, an engine restart) or an engine that stopped
answering is the infrastructure's; a container the kernel stopped for memory (the agent's
processes outgrew the task's limit) is the agent's. Only the engine's record decides (State,
OOMKilled, whether it answers at all); nothing inside the container, which the agent
controls, is read. PID 1 ignores signals sent from inside (rsr.sandbox.docker_api), so the
agent cannot stop its own container any other way than by memory, and the storage watchdog's
stop is recorded by the sandbox before it happens.
"""

from __future__ import annotations

from dataclasses import dataclass

from rsr.sandbox.infra import EngineError, InfraError, SandboxLostError


@dataclass(frozen=True)
class Fate:
    """`running`; else `infra` (not the agent's doing) or `oom` (the agent's)."""

    running: bool
    infra: InfraError | None = None
    oom: str | None = None


def container_fate(container: str) -> Fate:
    """The engine's view of `container` (blocking: call it through asyncio.to_thread)."""
    from docker.errors import APIError, NotFound

    from rsr.sandbox import engine

    short = container[:12]
    try:
        info = engine.api().inspect_container(container)
    except NotFound:
        return Fate(False, SandboxLostError(f"the sandbox container {short} was removed while the sample ran "
                                            "(from outside the run: `docker rm`, a clean-up, an engine reset)"))
    except APIError as e:
        if e.status_code is not None and e.status_code < 500:
            raise
        return Fate(False, EngineError(f"the Docker engine answered {e.status_code} while the sample ran: "
                                       f"{_first_line(e)}"))
    except Exception as e:  # noqa: BLE001 - a refused or reset connection: the engine is gone
        return Fate(False, EngineError(f"the Docker engine stopped answering while the sample ran: "
                                       f"{type(e).__name__}: {_first_line(e)}"))
    state = info.get("State") or {}
    if state.get("Running") and not state.get("Paused"):
        return Fate(True)
    if state.get("OOMKilled"):
        return Fate(False, oom="the sandbox ran out of memory (the kernel's OOM killer stopped its container): "
                              "the agent's processes outgrew the task's memory limit")
    return Fate(False, SandboxLostError(
        f"the sandbox container {short} stopped while the sample ran (status {state.get('Status')!r}, exit "
        f"{state.get('ExitCode')}, at {state.get('FinishedAt')}): stopped from outside the run "
        "(`docker kill`, an engine restart)"))


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines() or [""])[0][:300]
