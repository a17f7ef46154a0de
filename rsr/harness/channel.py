"""One persistent shell per sandbox for the harness's own short scripts (tmux send, wait, read).

A `bash` started once per session reads length-prefixed scripts from its stdin and answers each
with the script's output and a token-tagged status line, so a turn's tmux work costs one
round trip on an open connection instead of one exec each. Sandboxes without engine access
(or a session that broke) fall back to `sandbox.exec`; results are the same either way.
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
import time
from datetime import UTC, datetime
from typing import Any

from inspect_ai.util import ExecResult, SandboxEnvironment

# Each script runs in a subshell, so an `exit` ends the script, never the loop. `read -N`
# counts characters in UTF-8 locales: lengths are bytes, so it reads under the C locale.
# The token arrives as the first line of stdin, not in the environment: nothing the shell
# starts (the agent's tmux server included) inherits it, and /proc/*/environ does not show it.
_LOOP = ('IFS= read -r t; while IFS= read -r n; do LC_ALL=C IFS= read -r -N "$n" s; '
         '( eval "$s" ); printf "\\n%s %d\\n" "$t" $?; done')


class ShellChannel:
    """Runs shell scripts in the sandbox as `user`; `run` has the shape of `sandbox.exec`."""

    def __init__(self, sbx: SandboxEnvironment, user: str | None = None) -> None:
        self.sbx = sbx
        self.user = user
        self._session: Any = None
        self._token = ""
        self._lock = asyncio.Lock()
        self._broken = False

    def _container(self) -> str | None:
        inner = getattr(self.sbx, "_sandbox", self.sbx)
        from rsr.sandbox.docker_api import RsrDockerSandbox

        return inner.container if isinstance(inner, RsrDockerSandbox) else None

    async def _open(self) -> Any:
        if self._session is not None and not self._session.closed:
            return self._session
        container = self._container()
        if container is None or self._broken:
            return None
        from rsr.sandbox import engine

        self._token = f"@@rsr-channel-{secrets.token_hex(8)}@@"
        session = await asyncio.to_thread(
            engine.ExecSession, container, ["bash", "--noprofile", "--norc", "-c", _LOOP], user=self.user)
        await asyncio.to_thread(session.send, f"{self._token}\n".encode())
        self._session = session
        return self._session

    async def run(self, script: str, timeout: float = 30) -> ExecResult[str]:
        async with self._lock:
            try:
                session = await self._open()
            except Exception:  # noqa: BLE001 - the plain exec path below still works
                self._broken, session = True, None
            if session is None:
                return await self.sbx.exec(["sh", "-c", script], user=self.user, timeout=int(timeout))
            started = datetime.now(UTC)
            result = await self._request(session, script, timeout)
            _log_event(started, script, self.user, timeout, result)
            return result

    async def _request(self, session: Any, script: str, timeout: float) -> ExecResult[str]:
        body = script.encode()
        marker = ("\n" + self._token + " ").encode()
        deadline = time.monotonic() + timeout
        try:
            await asyncio.to_thread(session.send, f"{len(body)}\n".encode() + body)
            out, err = await asyncio.to_thread(session.read_until, marker, deadline)
            # The status line ends with the exit code and a newline, possibly in a later frame.
            while b"\n" not in out[out.rfind(marker) + len(marker):]:
                more, more_err = await asyncio.to_thread(session.read_until, b"\n", deadline)
                out += more
                err += more_err
        except TimeoutError:
            await asyncio.to_thread(session.close)
            raise TimeoutError(f"Command timed out after {timeout} seconds") from None
        except (EOFError, OSError):
            # The shell died (its container stopped, or it was killed): the exec path reports why.
            await asyncio.to_thread(session.close)
            self._session = None
            return await self.sbx.exec(["sh", "-c", script], user=self.user, timeout=int(timeout))
        text = out.decode("utf-8", errors="replace")
        cut = text.rfind("\n" + self._token + " ")
        code = int(text[cut + len(self._token) + 2:].strip() or 1)
        return ExecResult(success=code == 0, returncode=code, stdout=text[:cut],
                          stderr=err.decode("utf-8", errors="replace"))

    async def close(self) -> None:
        if self._session is not None:
            await asyncio.to_thread(self._session.close)
            self._session = None


def _log_event(started: datetime, script: str, user: str | None, timeout: float, result: ExecResult[str]) -> None:
    """The transcript event an exec would have produced, so `inspect view` shows the same steps."""
    from inspect_ai.event._sandbox import SandboxEvent
    from inspect_ai.log._transcript import transcript

    options: dict[str, Any] = {"timeout": timeout, "channel": True}
    if user:
        options["user"] = user
    output = f"{result.stderr}\n\n{result.stdout}" if result.stderr else result.stdout
    transcript()._event(SandboxEvent(timestamp=started, action="exec", cmd=shlex.join(["sh", "-c", script]),
                                     options=options, result=result.returncode, output=output[-20000:],
                                     completed=datetime.now(UTC)))
