"""The reference runner for differential tests: Harbor 0.26 in a Python 3.12 venv under `.cache/`.

Installed on first use (about a minute, from PyPI) and reused afterwards; a file lock keeps
concurrent test workers from installing it twice. Tests that need it call `harbor_home()`; it
skips only where no Python 3.12 exists and fails instead when `RSR_REQUIRE_HARBOR=1` (CI).
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HARBOR_VERSION = "0.26.0"
REPO_ROOT = Path(__file__).resolve().parents[1]


def _python312() -> str | None:
    # pyenv's shim named python3.12 exists even when that version is not selected: real
    # interpreters under versions/ come first, the PATH lookup last.
    candidates: list[str | None] = []
    roots = [os.environ.get("PYENV_ROOT"), os.path.expanduser("~/.pyenv"), "/root/.pyenv", "/opt/pyenv"]
    try:
        roots.insert(0, subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                                       timeout=10).stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    for root in filter(None, roots):
        candidates.extend(sorted(glob.glob(f"{root}/versions/3.12*/bin/python")))
    candidates.append(shutil.which("python3.12"))
    for candidate in filter(None, candidates):
        try:
            if subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"],
                              capture_output=True, timeout=30).returncode == 0:
                return candidate
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


def _unavailable(reason: str) -> None:
    if os.environ.get("RSR_REQUIRE_HARBOR") == "1":
        pytest.fail(f"RSR_REQUIRE_HARBOR=1 but {reason}")
    pytest.skip(reason)


def harbor_home() -> Path:
    """The venv holding `harbor==0.26.0` (its `bin/harbor`, its sources under lib/python3.12)."""
    venv = REPO_ROOT / ".cache" / "hvenv"
    stamp = venv / f".harbor-{HARBOR_VERSION}"
    if stamp.is_file():
        return venv
    python = _python312()
    if python is None:
        _unavailable("no Python 3.12 interpreter (Harbor 0.26 needs one)")
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / "hvenv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.is_file():
            subprocess.run([python, "-m", "venv", str(venv)], check=True)
            done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"harbor=={HARBOR_VERSION}"],
                                  capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                _unavailable(f"pip install harbor=={HARBOR_VERSION} failed: {done.stderr[-2000:]}")
            stamp.touch()
    return venv


def harbor_site_packages() -> Path:
    return next((harbor_home() / "lib").glob("python3.12/site-packages"))
