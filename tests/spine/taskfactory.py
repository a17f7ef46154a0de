"""Writes small synthetic task directories for tests (Harbor and TB1 layouts)."""

from __future__ import annotations

import textwrap
from pathlib import Path

BASE_DOCKERFILE = "FROM debian:bookworm-slim\nWORKDIR /app\n"


def write(path: Path, text: str, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    if mode is not None:
        path.chmod(mode)
    return path


def harbor_task(root: Path, name: str, *, toml: str | None = None, test_sh: str | None = None,
                solve_sh: str = "echo done > /app/out.txt\n", instruction: str = "Write done to /app/out.txt.",
                dockerfile: str = BASE_DOCKERFILE, extra: dict[str, str] | None = None) -> Path:
    d = root / name
    write(d / "instruction.md", instruction + "\n")
    write(d / "task.toml", toml if toml is not None else f"""
        schema_version = "1.1"
        [task]
        name = "test/{name}"
        [metadata]
        category = "testing"
        difficulty = "easy"
        [verifier]
        timeout_sec = 30
        [agent]
        timeout_sec = 60
        [environment]
        workdir = "/app"
        """)
    write(d / "environment" / "Dockerfile", dockerfile)
    write(d / "tests" / "test.sh", test_sh if test_sh is not None else """
        mkdir -p /logs/verifier
        if grep -qx done /app/out.txt 2>/dev/null; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
        """, 0o755)
    write(d / "solution" / "solve.sh", solve_sh, 0o755)
    for rel, text in (extra or {}).items():
        write(d / rel, text)
    return d
