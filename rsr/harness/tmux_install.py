"""Make sure tmux exists in the sandbox (kept apart from driving it, see `rsr.harness.tmux`)."""

from __future__ import annotations

from inspect_ai.util import SandboxEnvironment

from rsr.errors import RsrError

# One line per package manager; the first that exists is used.
_INSTALL = (
    "if command -v apt-get >/dev/null; then "
    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux; "
    "elif command -v apk >/dev/null; then apk add --no-cache tmux bash; "
    "elif command -v dnf >/dev/null; then dnf install -y tmux; "
    "elif command -v yum >/dev/null; then yum install -y tmux; "
    "else echo 'no known package manager' >&2; exit 3; fi"
)


class TmuxUnavailableError(RsrError):
    """tmux is missing from the sandbox and cannot be installed."""


async def has_tmux(sbx: SandboxEnvironment) -> bool:
    result = await sbx.exec(["sh", "-c", "command -v tmux && command -v bash"])
    return result.success


async def ensure_tmux(sbx: SandboxEnvironment, allow_internet: bool, task: str = "") -> str:
    """Return how tmux was obtained ("present" or "installed"); raise if it cannot be had."""
    if await has_tmux(sbx):
        return "present"
    where = f"task {task!r}: " if task else ""
    if not allow_internet:
        raise TmuxUnavailableError(
            f"{where}tmux (and bash) are needed by the terminal harness but are not in the "
            "sandbox image, and the task has no network to install them. Add tmux to the "
            "task's environment/Dockerfile (core images install it in their shared first layer)."
        )
    result = await sbx.exec(["sh", "-c", _INSTALL], user="root", timeout=600)
    if not result.success or not await has_tmux(sbx):
        raise TmuxUnavailableError(
            f"{where}installing tmux in the sandbox failed (exit {result.returncode}): "
            f"{result.stderr.strip()[-500:]}. Add tmux to the task's environment/Dockerfile."
        )
    return "installed"
