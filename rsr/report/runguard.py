"""What an eval-set run holds while it runs: its log directory, and the signals that end it.

- The log directory is locked (`<log_dir>/.rsr-run.lock`, an flock held for the whole run and
  released by the kernel when the owner exits, however it exits): a second run on the same
  directory would re-run every unfinished sample beside the first and Inspect's retry clean-up
  would delete one of the two logs. The file records the owner's pid, host, command and start
  time so that the refusal can name them.
- SIGTERM (a batch system's stop) is handled as Ctrl-C is (`rsr.interrupts`): Inspect cancels
  the samples, their sandboxes are cleaned up and the logs are written as `cancelled`; the run
  then reports that it was interrupted (Inspect's own summary still says it completed) and
  exits 128 + signal.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rsr.errors import RsrError
from rsr.interrupts import RunInterrupted

__all__ = ["LOCK_FILE", "LogDirLocked", "RunInterrupted", "log_dir_lock",
           "remove_own_containers"]

LOCK_FILE = ".rsr-run.lock"


class LogDirLocked(RsrError):
    """Another live run owns the log directory."""


def _owner(path: Path) -> str:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "another process (its lock file is unreadable)"
    return (f"pid {info.get('pid')} on {info.get('host')} since {info.get('started')}"
            f" (`{info.get('command')}`)")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def log_dir_lock(log_dir: str | Path, command: str) -> Iterator[Path]:
    """Hold `<log_dir>/.rsr-run.lock` for the duration; LogDirLocked names the owner if another
    run holds it. On a filesystem without flock the pid in the file decides (same host only)."""
    folder = Path(log_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirLocked(f"{folder}: the log directory is in use by {_owner(path)}; wait for "
                               "that run to finish (or stop it), or pass another --log-dir") from None
        except OSError as e:  # no flock here (some network filesystems): the recorded pid decides
            if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                os.close(fd)
                raise
            _refuse_live_pid(path, folder)
        # The previous owner may have removed the file between our open and our lock: then we
        # hold a lock on a file nobody else can find; open the path again.
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    record = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(record).encode() + b"\n", 0)
    try:
        yield path
    finally:
        # Unlink while still holding the lock, so that no one locks a file about to vanish.
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        os.close(fd)


def _refuse_live_pid(path: Path, folder: Path) -> None:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return
    pid, host = info.get("pid"), info.get("host")
    if isinstance(pid, int) and pid != os.getpid() and (host != socket.gethostname() or _pid_alive(pid)):
        raise LogDirLocked(f"{folder}: the log directory is in use by {_owner(path)}; wait for that "
                           "run to finish (or stop it), or pass another --log-dir")


def remove_own_containers() -> int:
    """Remove the rsr-docker containers this process created and still has (an interrupted
    run's last word: a cancelled sample's clean-up may not have run). Returns a count."""
    from docker.errors import DockerException

    from rsr.sandbox import engine

    try:
        found = [i for i in engine.owned_containers() if not engine.is_kept(i)]
    except (RsrError, DockerException, OSError):  # no engine answers: nothing of ours to remove
        return 0
    for info in found:
        engine.remove_container(info["Id"])
    return len(found)
