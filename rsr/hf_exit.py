"""Let a process that used Inspect's `hf/` provider exit cleanly.

Inspect's hf provider runs every generation in one daemon thread, and a sample that ends while
its generation runs (an agent timeout, a time limit, a cancelled sample) leaves that generation
going: nothing can cancel it. When the process then exits, Python stops the daemon thread the
moment it next needs the interpreter, which is inside torch's C++ code, and the C++ runtime
aborts ("terminate called without an active exception", exit status 134) after the results
were printed. At exit, before Python starts tearing down, this stops a busy generation thread
by raising SystemExit in it (it lands at the next Python step of the decoding loop, so within
one token) and waits for it to end. An idle thread (waiting for work) is left alone: it holds
no C++ frames.
"""

from __future__ import annotations

import atexit
import ctypes
import sys
import threading

HF_PROVIDER = "inspect_ai.model._providers.hf"
BUSY_FUNCTION = "_generate_batch"
"""The hf provider's function that holds a batch while torch generates it."""

STOP_TIMEOUT_S = 60.0


def hf_generation_thread() -> threading.Thread | None:
    """The hf provider's generation thread while it is generating, else None."""
    module = sys.modules.get(HF_PROVIDER)  # never imported: no hf model was used
    thread = getattr(module, "batch_thread", None)
    if not isinstance(thread, threading.Thread) or not thread.is_alive() or thread.ident is None:
        return None
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == BUSY_FUNCTION:
            return thread
        frame = frame.f_back
    return None


def stop_hf_generation(timeout: float = STOP_TIMEOUT_S) -> bool:
    """Stop an abandoned hf generation; True if one was running and has stopped."""
    thread = hf_generation_thread()
    if thread is None or thread.ident is None:
        return False
    # A thread that ends in SystemExit ends silently (threading's excepthook ignores it).
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                               ctypes.py_object(SystemExit))
    thread.join(timeout)
    return not thread.is_alive()


def install() -> None:
    """Stop an abandoned hf generation when the process exits (atexit runs before teardown)."""
    atexit.unregister(stop_hf_generation)  # importing twice registers once
    atexit.register(stop_hf_generation)
