"""Who stopped a sandbox's container: the engine's own record, streamed while the run goes on.

A container stops when its PID 1 exits. From outside, that happens through the engine (`docker
kill`, `docker stop`, `docker rm -f`, the daemon shutting down): the infrastructure's doing. From
inside, the agent can do it too: PID 1 ignores the signals sent to it from inside, but the agent
runs as root beside it and can ptrace it or write its memory (a same-uid tracer needs no
capability) and make it call exit. The container's state cannot tell the two apart: the agent
chooses the exit code. The engine's event stream can: a stop through the engine's API logs a
`kill` event (with its signal) before the `die`, and nothing inside a container makes the engine
log one for it.

The daemon keeps only its last 256 events in memory (every exec logs three), so asking for a
container's events after it stopped is unreliable: each process that runs rsr-docker sandboxes
streams the engine's `start`, `kill`, `stop`, `die` and `destroy` events for them from before its
first container starts (`watch`), on a thread of its own. Each connection replays what the daemon
still holds and then goes on live with nothing lost in between; each (re)connection is a new
epoch. The verdict on a container that stopped (`verdict`):

- `outside`: a `kill` or `stop` was seen for it: infrastructure;
- `inside`: its `start` and its `die` arrived in one epoch (one unbroken stream, in which every
  event logged between the two passed), with no `kill` or `stop`: the agent's own doing once
  the agent began (rsr.sandbox.fate; before then the image's entrypoint exited: infra `sandbox`);
- `unknown`: anything else (the stream broke, as it does when the engine restarts, or began after
  the container started, or the `die` did not arrive in time): counted as infrastructure, since
  only an engine, never an agent, breaks the stream.

Not covered: a kill of PID 1 from the host's shell by its pid, past the engine, leaves no event
and reads as `inside`; stop sandboxes through the engine. Compose sandboxes (Inspect's docker
provider) are not watched: their stops stay `unknown`, as before.

State (per process and engine, what one run needs): the stream's thread and epoch, and one small
record per watched container seen started and not yet destroyed (dropped at its `destroy`; at most
MAX_RECORDS, the oldest dropped first, which then reads `unknown`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Literal

from rsr.sandbox.engine import LABEL_SANDBOX

logger = logging.getLogger(__name__)

Verdict = Literal["outside", "inside", "unknown"]

WATCHED = "rsr-docker"
"""The sandbox label value of the containers watched (rsr.sandbox.docker_api's)."""
EVENTS = ["start", "kill", "stop", "die", "destroy"]
DIE_WAIT_SECONDS = 10.0
"""How long a verdict waits for the `die` of a container the engine already reports stopped
(it follows within milliseconds on a healthy engine)."""
MAX_RECORDS = 4096
RECONNECT_SECONDS = 0.5


@dataclass
class _Record:
    started: int | None = None
    """The epoch its `start` arrived in."""
    stopped_by: str | None = None
    """The first `kill` or `stop` seen for it, as `kill (signal 9)`."""
    died: int | None = None
    """The epoch its `die` arrived in."""


class StopWatch:
    """One engine's container events for rsr-docker's sandboxes, streamed on a daemon thread."""

    def __init__(self, connect: Any) -> None:
        self._connect = connect  # () -> a docker.APIClient of its own (the stream holds a connection)
        self._cond = threading.Condition()
        self._epoch = 0
        self._connected = False
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._thread: threading.Thread | None = None
        self._stream: Any = None
        self._closed = False

    def start(self, wait: float) -> bool:
        """Start streaming (once); wait up to `wait` seconds for the stream. True when it streams."""
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rsr-stop-watch", daemon=True)
                self._thread.start()
            self._cond.wait_for(lambda: self._connected, timeout=wait)
            return self._connected

    def verdict(self, container: str, wait: float = DIE_WAIT_SECONDS) -> tuple[Verdict, str]:
        """Who stopped `container` (its full id), and why that verdict, once its `die` arrived
        (or `wait` passed, or the stream broke)."""
        deadline = time.monotonic() + wait
        with self._cond:
            epoch = self._epoch
            while True:
                record = self._records.get(container)
                if record is not None and (record.stopped_by or record.died is not None):
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not self._connected or self._epoch != epoch:
                    break
                self._cond.wait(left)
            broke = not self._connected or self._epoch != epoch
            record = replace(record) if record is not None else None  # as it is now, not as it becomes
        if record is None:
            return "unknown", "the engine's event stream never showed it start (begun late or broken)"
        if record.stopped_by:
            return "outside", f"the engine logged a {record.stopped_by} for it"
        if record.died is None:
            return "unknown", ("the engine's event stream broke (an engine restart) before it showed the exit"
                               if broke else f"the engine's event stream showed no exit within {wait:.0f} s")
        if record.started == record.died:
            return "inside", "the engine logged its start and its exit with no kill or stop between them"
        return "unknown", "the engine's event stream broke (an engine restart) while it ran"

    def close(self) -> None:
        """Stop streaming (a process's own watch lives as long as the process)."""
        with self._cond:
            self._closed = True
            stream = self._stream
        if stream is not None:
            try:
                stream.close()
            except Exception:  # noqa: BLE001 - already broken
                pass

    def _run(self) -> None:
        while not self._closed:
            stream = None
            try:
                api = self._connect()
                # since=1: replay all the daemon still holds, then go on live, with no gap between.
                stream = api.events(since=1, decode=True, filters={"type": "container", "event": EVENTS,
                                                                   "label": f"{LABEL_SANDBOX}={WATCHED}"})
                with self._cond:
                    if self._closed:
                        break
                    self._stream = stream
                    self._epoch += 1
                    self._connected = True
                    self._cond.notify_all()
                for event in stream:
                    self._record(event)
            except Exception as e:  # noqa: BLE001 - refused, reset, a daemon going away: reconnect
                logger.debug("engine event stream: %s: %s", type(e).__name__, e)
            finally:
                if stream is not None:
                    try:
                        stream.close()
                    except Exception:  # noqa: BLE001 - already broken
                        pass
            with self._cond:
                self._connected = False
                self._cond.notify_all()
            time.sleep(RECONNECT_SECONDS)

    def _record(self, event: dict[str, Any]) -> None:
        action = str(event.get("Action") or event.get("status") or "")
        container = str((event.get("Actor") or {}).get("ID") or event.get("id") or "")
        if not container:
            return
        with self._cond:
            if action == "destroy":
                self._records.pop(container, None)
            else:
                record = self._records.get(container)
                if record is None:
                    record = self._records[container] = _Record()
                    while len(self._records) > MAX_RECORDS:
                        self._records.popitem(last=False)
                if action == "start":
                    record.started = self._epoch
                elif action in ("kill", "stop") and record.stopped_by is None:
                    signal = ((event.get("Actor") or {}).get("Attributes") or {}).get("signal")
                    record.stopped_by = f"{action} (signal {signal})" if signal else action
                elif action == "die":
                    record.died = self._epoch
            self._cond.notify_all()


_watches: dict[tuple[int, str], StopWatch] = {}
_watches_lock = threading.Lock()


def _key() -> tuple[int, str]:
    from rsr.sandbox import engine

    return os.getpid(), str(engine.api().base_url)


def _connector(environment: dict[str, str]) -> Any:
    """Connects to the engine `environment` names (DOCKER_HOST ...), as it was when the watch began."""
    def connect() -> Any:
        import docker

        return docker.DockerClient.from_env(environment=environment, timeout=60, max_pool_size=1).api

    return connect


def watch(wait: float = 10.0) -> bool:
    """Stream this engine's stops for this process (from now on: call before the first container
    starts). True when the stream is up."""
    key = _key()
    with _watches_lock:
        found = _watches.get(key)
        if found is None:
            found = _watches[key] = StopWatch(_connector(dict(os.environ)))
    return found.start(wait)


def watched(labels: dict[str, str]) -> bool:
    """Whether a container with these labels is one `watch` streams the stops of."""
    return labels.get(LABEL_SANDBOX) == WATCHED


def verdict(container: str, wait: float = DIE_WAIT_SECONDS) -> tuple[Verdict, str]:
    """Who stopped `container` (its full id): see the module docstring. `unknown` when this
    process never watched its engine."""
    try:
        key = _key()
    except Exception:  # noqa: BLE001 - no engine configured: nothing was watched
        key = None
    with _watches_lock:
        found = _watches.get(key) if key else None
    if found is None:
        return "unknown", "no stream of the engine's events was kept for it"
    return found.verdict(container, wait)
