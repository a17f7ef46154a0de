"""The one rule for relative paths in rsr's config files.

A relative path written in a config file (training recipe, RL config, factory config, rounds
config) is relative to the folder of that file, for what the run reads and what it writes
alike, from whatever directory the command runs. A path typed on the command line (the config
itself, `--output-dir`) is relative to the working directory, as in any command. The one
exception is spelt out: `rsr:REL` names a file rsr ships (`rsr:training/recipes/tiny-cpu.yaml`:
the checkout's copy, or the wheel's under `rsr/_bundled/`). Nothing falls back silently to the
checkout: a path that does not exist is an error naming the file, the field and the folder it
was resolved against.
"""

from __future__ import annotations

import re
from pathlib import Path

from rsr.bundled import BUNDLED_FOLDERS, bundled

__all__ = ["SHIPPED", "command_line_path", "is_hub_id", "resolve", "resolve_model", "shipped"]

SHIPPED = "rsr:"
"""Prefix of a path that names a file shipped with rsr, relative to the repository root."""

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def shipped(rel: str) -> Path:
    """The shipped copy of `rel` (repository-relative); an error when rsr ships no such file."""
    from rsr.errors import RsrError

    found = bundled(rel)
    if found is None:
        raise RsrError(f"{SHIPPED}{rel}: rsr ships no such file (it ships {', '.join(BUNDLED_FOLDERS)})")
    return found


def resolve(value: str | Path, base: Path) -> Path:
    """A path written in a config file whose folder is `base`."""
    text = str(value)
    if text.startswith(SHIPPED):
        return shipped(text[len(SHIPPED):])
    path = Path(text).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def command_line_path(value: str | Path) -> Path:
    """A path typed on the command line: the working directory's, or `rsr:REL` for a shipped file."""
    text = str(value)
    if text.startswith(SHIPPED):
        return shipped(text[len(SHIPPED):])
    return Path(text).expanduser().absolute()


def is_hub_id(value: str) -> bool:
    """Whether `value` reads as a Hugging Face repo id (`name` or `org/name`)."""
    return bool(_HUB_ID.fullmatch(value)) and not value.startswith(".")


def resolve_model(value: str, base: Path) -> str:
    """A model written in a config file: a local checkpoint (resolved like any path) or a hub id.

    A value is a local path when it starts with `.`, `/`, `~` or `rsr:`, has more than one `/`,
    or exists under `base`; otherwise (`Qwen/Qwen3.5-27B`) it is a hub id and stays as written.
    Write a local checkpoint that could read as a hub id as `./name` or `../dir/name`."""
    local = resolve(value, base)
    if not is_hub_id(value) or local.exists():
        return str(local)
    return value
