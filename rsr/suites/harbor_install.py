"""Where Harbor 0.26 comes from on a machine without it: a Python 3.12 that really runs (pyenv's
`python3.12` shim exists even when that version cannot be selected), and the one command that
installs Harbor with it. `rsr rehearse --install-harbor` runs that command; every message that
needs Harbor names it."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

from rsr.errors import RsrError

HARBOR_VERSION = "0.26.0"


def python312() -> str | None:
    """A Python 3.12 interpreter that starts, or None."""
    roots = [os.environ.get("PYENV_ROOT"), os.path.expanduser("~/.pyenv")]
    candidates = [p for root in filter(None, roots) for p in sorted(glob.glob(f"{root}/versions/3.12*/bin/python"))]
    candidates += [shutil.which("python3.12") or ""]
    for candidate in filter(None, dict.fromkeys(candidates)):
        try:
            ok = subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"],
                                capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            return candidate
    return None


def default_venv() -> Path:
    return Path.cwd() / ".cache" / "hvenv"


def install_command(venv: Path | None = None) -> str | None:
    """The shell command that installs Harbor here, or None without a Python 3.12."""
    python = python312()
    if python is None:
        return None
    venv = venv or default_venv()
    return f"{python} -m venv {venv} && {venv}/bin/pip install harbor=={HARBOR_VERSION}"


def how_to_install() -> str:
    command = install_command()
    if command is None:
        return ("Harbor needs Python >= 3.12 and none runs here: install one (e.g. `uv python install 3.12` "
                f"or `pyenv install 3.12`), then `python3.12 -m venv .cache/hvenv && .cache/hvenv/bin/pip "
                f"install harbor=={HARBOR_VERSION}`, or set RSR_HARBOR=/path/to/harbor")
    return f"install it with `{command}` (about a minute), or set RSR_HARBOR=/path/to/harbor"


def install(venv: Path | None = None) -> Path:
    """Install Harbor into `venv`; its `harbor` executable."""
    python = python312()
    if python is None:
        raise RsrError(how_to_install())
    venv = venv or default_venv()
    for step in ([python, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "pip"), "install", "-q", f"harbor=={HARBOR_VERSION}"]):
        done = subprocess.run(step, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            tail = " ".join((done.stderr or done.stdout).split())[-400:]
            raise RsrError(f"installing Harbor failed: `{' '.join(step)}` exited {done.returncode}: {tail}")
    return venv / "bin" / "harbor"
