"""rsr's cache directory on this machine: `$RSR_CACHE_DIR`, else `$XDG_CACHE_HOME/rsr` (~/.cache/rsr)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(name: str | None = None) -> Path:
    """The cache root, or its `name` subdirectory (created)."""
    base = Path(os.environ.get("RSR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "rsr"))
    path = base / name if name else base
    if name:
        path.mkdir(parents=True, exist_ok=True)
    return path
