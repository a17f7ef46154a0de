"""Files rsr ships beside its code: the core suite, eval specs, recipes, examples.

In a checkout they are the repository's folders; a built wheel carries copies of them under
`rsr/_bundled/` (setup.py's build step), so `rsr/core`, `rsr eval run core` and `rsr:` paths
(rsr/config_paths.py) work from any directory after `pip install rsr`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUNDLED_FOLDERS", "bundled", "inside_package"]

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


def inside_package(path: Path) -> bool:
    """Whether `path` lies in the installed package (a wheel's, not a checkout's `rsr/`)."""
    return (_PACKAGE / "_bundled").is_dir() and _PACKAGE in Path(path).absolute().parents
