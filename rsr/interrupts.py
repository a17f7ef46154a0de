"""Stopping a command by signal: SIGTERM (a service manager, a batch system, `timeout`,
`kill`) is handled as Ctrl-C is, whoever handles Ctrl-C at that moment (Inspect's event loop,
or Python's KeyboardInterrupt), so every engine, sandbox and log a command holds is stopped,
cleaned up and marked as interrupted. `rsr.cli.main` wraps every command in it;
`rsr.report.evalset` wraps a run to say which signal stopped it (`RunInterrupted`, whose exit
code is 128 + the signal's number wherever the run was started from)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from rsr.errors import RsrError


class RunInterrupted(RsrError):
    """The run was stopped by a signal before it finished; `signum` says which."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@dataclass
class Interruption:
    """Which signal stopped the run (None: none did)."""

    signum: int | None = None


@contextmanager
def interruptible(swallow: bool = True) -> Iterator[Interruption]:
    """Run the body with SIGTERM handled as Ctrl-C, and record either signal.

    SIGTERM is turned into a SIGINT to this process, so whichever handler Inspect's event loop
    has installed for Ctrl-C (cancel the samples, clean up the sandboxes, write the logs as
    cancelled) runs for both, and outside an event loop Python's raises KeyboardInterrupt
    (every `with` and `finally` on the way out runs: engines stop). A KeyboardInterrupt that
    escapes the body (a signal outside the event loop, or a second Ctrl-C) is recorded, and
    swallowed unless `swallow` is False."""
    seen = Interruption()

    def on_term(signum: int, frame: FrameType | None) -> None:
        seen.signum = seen.signum or signum
        os.kill(os.getpid(), signal.SIGINT)

    # Only the main thread may set handlers; elsewhere the body runs as it is.
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_term) if main else None
    # A job a shell script started with `&` inherits SIGINT ignored, and then nothing would
    # handle the SIGINT that SIGTERM becomes: give it Python's, which the event loop replaces.
    ignored = main and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield seen
    except KeyboardInterrupt:
        seen.signum = seen.signum or signal.SIGINT
        if not swallow:
            raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
