"""What became of a sample's container, read from the engine alone.

When a call into a sample's container fails, the cause decides who the failure belongs to:
a container stopped from outside (`docker kill`, an engine restart) or an engine that stopped
answering is the infrastructure's; a container the kernel stopped for memory (the agent's
processes outgrew the task's limit) or whose PID 1 was made to exit from inside is the agent's.
Only the engine's record decides (State, OOMKilled, its event stream, whether it answers at
all); nothing inside the container, which the agent controls, is read. PID 1 ignores signals
sent from inside (rsr.sandbox.docker_api), but root in the container can still ptrace it, so
an exit is the infrastructure's only when the engine logged a stop for it or lost track of it
(rsr.sandbox.stops); the storage watchdog's stop is recorded by the sandbox before it happens.
"""

from __future__ import annotations

from dataclasses import dataclass

from rsr.sandbox.infra import EngineError, InfraError, SandboxLostError


@dataclass(frozen=True)
class Fate:
    """`running`; else `infra` (not the agent's doing), or the agent's: `oom` (stopped for
    memory) or `exited` (its PID 1 made to exit from inside)."""

    running: bool
    infra: InfraError | None = None
    oom: str | None = None
    exited: str | None = None


def container_fate(container: str, *, agent_began: bool) -> Fate:
    """The engine's view of `container` (blocking: call it through asyncio.to_thread).
    `agent_began`: whether the sample's agent has started (a container that stops from inside
    before then was stopped by its image or the task's setup, never by the agent)."""
    from docker.errors import APIError, NotFound

    from rsr.sandbox import engine, stops

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
    how = (f"status {state.get('Status')!r}, exit {state.get('ExitCode')}, at {state.get('FinishedAt')}")
    why = "the engine was not watched for it"
    labels = (info.get("Config") or {}).get("Labels") or {}
    if state.get("Status") in ("exited", "dead") and stops.watched(labels):
        who, why = stops.verdict(str(info.get("Id") or container))
        if who == "inside" and agent_began:
            return Fate(False, exited=(
                f"the sandbox container {short} stopped from inside ({how}): {why}, so a process in the "
                "container made its PID 1 exit (the agent's doing: root in the container can ptrace PID 1)"))
        if who == "inside":
            return Fate(False, InfraError(
                f"the sandbox container {short} stopped from inside before the agent ran ({how}): {why}; "
                "its PID 1 (the image's entrypoint or command) exited", kind="sandbox"))
    return Fate(False, SandboxLostError(
        f"the sandbox container {short} stopped while the sample ran ({how}): stopped from outside the run "
        f"(`docker kill`, an engine restart): {why}"))


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines() or [""])[0][:300]
