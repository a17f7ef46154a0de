"""Files a task's tests execute as they start: never the agent's under strict.

A workdir in a home directory (`/root`: 63 of 87 SkillsBench tasks) is a deliverable root, so it
would carry `~/.local/bin/env`, `~/.cargo/env` and the shells' start-up files, which test.sh
`source`s before a single test runs: a planted one runs as part of the checker. Under strict
these paths are dropped from the agent's changes (a declared path or one the reference solution
wrote is still carried, and judged by the audit). Which paths: the ones the task's own test
scripts source (`source X`, `. X`), read from the task directory and never from anything the
agent wrote, plus the start-up files that shells and the common toolchain installers use.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

HOME_STARTUP = ("*/.local/bin/env", "*/.cargo/env", "*/.nvm/nvm.sh", "*/.sdkman/bin/sdkman-init.sh",
                "/home/*/.bashrc", "/home/*/.profile", "/home/*/.bash_profile", "/home/*/.bash_login",
                "/root/.bash_login", "/home/*/.bash_logout", "/root/.bash_logout")
"""Start-up files by name: a shell reads them, or an installer's instructions tell test scripts
to source them."""

_SOURCED = re.compile(r"(?:^|[;&|({]|\bthen|\bdo|\belse)\s*(?:source|\.)\s+(\"[^\"]+\"|'[^']+'|[^\s;&|)]+)")


def home_of(user: str | None) -> str:
    """The home directory the tests run with (root's unless the task names another user)."""
    return "/root" if user in (None, "", "root", "0") else f"/home/{user}"


def sourced_paths(scripts: Iterable[str], home: str) -> list[str]:
    """Absolute paths the scripts source, `~`/`$HOME` expanded; a path built from any other
    variable cannot be told apart from the text and is left out (the name list covers the
    installers' files)."""
    found: set[str] = set()
    for text in scripts:
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            for match in _SOURCED.finditer(line):
                raw = match.group(1).strip("\"'")
                raw = re.sub(r"^(~|\$HOME|\$\{HOME\})(?=/|$)", home, raw)
                if raw.startswith("/") and "$" not in raw and "`" not in raw:
                    found.add(posixpath.normpath(raw))
    return sorted(found)


def startup_paths(test_files: dict[str, Path], user: str | None) -> list[str]:
    """What the tests execute at start-up, as globs over container paths (see the module doc)."""
    scripts: list[str] = []
    for container_path, host_path in test_files.items():
        if container_path.endswith(".sh"):
            try:
                scripts.append(host_path.read_text(errors="replace"))
            except OSError:
                continue
    return sorted({*HOME_STARTUP, *sourced_paths(scripts, home_of(user))})
