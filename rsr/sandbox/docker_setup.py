"""Checks behind `rsr doctor`: Docker engine, Compose v2, base image, disk."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

MIN_ENGINE = (24, 0, 6)
MIN_COMPOSE = (2, 21, 0)
BASE_IMAGE = "debian:bookworm-slim"
MIN_FREE_GB = 10.0


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.lstrip("v").split("+")[0].split("-")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _run(cmd: list[str], timeout: float = 20) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None


def setup_script() -> Path:
    return Path(str(resources.files("rsr.sandbox") / "setup-docker.sh"))


def remote_engine() -> str | None:
    """`DOCKER_HOST=...` or `DOCKER_CONTEXT=...` when they point the client away from the local
    engine that `--fix` installs; None otherwise."""
    host = os.environ.get("DOCKER_HOST", "").strip()
    if host and host not in ("unix:///var/run/docker.sock", "unix:///run/docker.sock"):
        return f"DOCKER_HOST={host}"
    context = os.environ.get("DOCKER_CONTEXT", "").strip()
    if context and context != "default":
        return f"DOCKER_CONTEXT={context}"
    return None


def run_checks(path_for_disk: str = "/var/lib/docker") -> list[Check]:
    fix = f"run `rsr doctor --fix` (runs {setup_script()} as root)"
    checks: list[Check] = []
    client = shutil.which("docker")
    checks.append(Check("docker client", client is not None, client or "not found", fix))
    remote = remote_engine()
    if remote:  # --fix would install a local engine that this client does not talk to
        fix = (f"{remote} points at an engine that does not answer: start it, or unset the "
               "variable to use this machine's engine (`rsr doctor --fix` sets up only that one)")
    engine = _run(["docker", "version", "--format", "{{json .Server}}"]) if client else None
    engine_version = None
    if engine and engine.returncode == 0 and engine.stdout.strip() not in ("", "null"):
        engine_version = json.loads(engine.stdout).get("Version", "")
    ok = engine_version is not None and _version_tuple(engine_version) >= MIN_ENGINE
    checks.append(Check("docker engine", ok,
                        f"{engine_version or 'not running'} (need >= {'.'.join(map(str, MIN_ENGINE))})", fix))
    compose = _run(["docker", "compose", "version", "--short"]) if client else None
    compose_version = compose.stdout.strip() if compose and compose.returncode == 0 else None
    ok = compose_version is not None and _version_tuple(compose_version) >= MIN_COMPOSE
    checks.append(Check("docker compose", ok,
                        f"{compose_version or 'not found'} (need v2 >= {'.'.join(map(str, MIN_COMPOSE))})", fix))
    if engine_version:
        image = _run(["docker", "image", "inspect", BASE_IMAGE, "--format", "{{.Size}}"])
        ok = bool(image and image.returncode == 0)
        detail = f"{int(image.stdout.strip()) / 1e6:.0f} MB" if ok and image else "missing"
        checks.append(Check(f"base image {BASE_IMAGE}", ok, detail, fix))
    disk_path = Path(path_for_disk)
    while not disk_path.exists():
        disk_path = disk_path.parent
    free_gb = shutil.disk_usage(disk_path).free / 1e9
    checks.append(Check("disk", free_gb >= MIN_FREE_GB, f"{free_gb:.1f} GB free at {disk_path}",
                        f"free at least {MIN_FREE_GB:.0f} GB (docker image prune)"))
    return checks


def fix() -> int:
    """Install and start everything (idempotent). Returns the script's exit status."""
    from rsr.errors import RsrError

    remote = remote_engine()
    if remote:
        raise RsrError(f"{remote} is set: `--fix` installs and starts a local Docker engine, which "
                       "this client would not use; unset it first, or start the engine it names")
    return subprocess.run(["bash", str(setup_script())]).returncode
