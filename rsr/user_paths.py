"""Path options checked before a command does anything: one line naming the option, what was
given, what it needs and the fix.

A folder an rsr command writes (`--log-dir`, `--out`, a factory's `output_dir`) must be a folder
or not exist yet, below a folder this user can write, on a real filesystem (not /proc, /sys or
/dev); a file it reads must exist and be a file. Otherwise the OS's error would surface deep in
Inspect or the factory, as a traceback, possibly after half a run's files were written.
"""

from __future__ import annotations

import os
from pathlib import Path

from rsr.errors import UserPathError

_VIRTUAL = (Path("/proc"), Path("/sys"), Path("/dev"))


def output_dir(path: str | Path, flag: str) -> Path:
    """`path` as a folder this command may create and write; nothing is created here."""
    given = Path(path).expanduser()
    target = given.absolute()
    if any(target == v or v in target.parents for v in _VIRTUAL):
        raise UserPathError(f"{flag} {given}: is on a virtual filesystem ({target.parts[1]}); "
                            "name a folder on a disk, e.g. ./logs")
    if target.exists() and not target.is_dir():
        raise UserPathError(f"{flag} {given}: is a file, not a folder; name a folder (it is created "
                            "if missing), e.g. " + str(given.parent / (given.stem + "-out")))
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UserPathError(f"{flag} {given}: {existing} is a file, so no folder can be made below "
                            "it; name a folder elsewhere")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserPathError(f"{flag} {given}: {existing} is not writable by this user; name a folder "
                            "you can write, e.g. ./logs")
    return given


def output_file(path: str | Path, flag: str) -> Path:
    """`path` as a file this command may (over)write."""
    given = Path(path).expanduser()
    if given.is_dir():
        raise UserPathError(f"{flag} {given}: is a folder; name a file in it, e.g. {given / 'out.json'}")
    output_dir(given.absolute().parent, flag)
    return given


def input_file(path: str | Path, flag: str, what: str = "file") -> Path:
    given = Path(path).expanduser()
    if given.is_dir():
        raise UserPathError(f"{flag} {given}: is a folder; expected a {what}")
    if not given.exists():
        raise UserPathError(f"{flag} {given}: no such {what}")
    if not os.access(given, os.R_OK):
        raise UserPathError(f"{flag} {given}: not readable by this user")
    return given


def input_path(path: str | Path, flag: str, what: str = "file or folder") -> Path:
    given = Path(path).expanduser()
    if not given.exists():
        raise UserPathError(f"{flag} {given}: no such {what}")
    if not os.access(given, os.R_OK):
        raise UserPathError(f"{flag} {given}: not readable by this user")
    return given
