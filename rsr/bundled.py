"""Files rsr ships beside its code: the core suite, eval specs, recipes, examples.

In a checkout they are the repository's folders; a built wheel carries copies of them under
`rsr/_bundled/` (setup.py's build step), so `rsr/core`, `rsr eval run core` and the recipes work
from any directory after `pip install rsr`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUNDLED_FOLDERS", "bundled", "find_file"]

BUNDLED_FOLDERS = ("tasks/core", "tasks/live", "evals", "training/recipes", "training/accelerate",
                   "examples", "tests/training/fixtures/trajectories.jsonl")
"""Repository folders (and files) a wheel carries, relative to the repository root; the last one
is the dataset of `training/recipes/tiny-cpu.yaml`."""

_PACKAGE = Path(__file__).resolve().parent


def bundled(rel: str) -> Path | None:
    """The shipped copy of a repository folder or file: the wheel's, else the checkout's."""
    for root in (_PACKAGE / "_bundled", _PACKAGE.parent):
        candidate = root / rel
        if candidate.exists():
            return candidate
    return None


def find_file(path: str | Path) -> Path:
    """`path` as given when it exists, else the shipped file at that repository-relative path
    (`training/recipes/tiny-cpu.yaml` from any directory); else `path` unchanged."""
    given = Path(path)
    if given.exists() or given.is_absolute():
        return given
    shipped = bundled(given.as_posix())
    return shipped if shipped is not None else given
