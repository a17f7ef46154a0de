"""A sandbox over one plain Docker container, addressed by id (via the `docker` CLI).

For driving containers that no Inspect provider created (tests of the tmux layer, ad-hoc
debugging); `container` lets the verifier find the engine container behind it.
"""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath
from typing import Any, Literal, overload

from inspect_ai.util import ExecResult, SandboxEnvironment, subprocess


class DockerContainerSandbox(SandboxEnvironment):
    """`SandboxEnvironment` interface over an existing container (created and removed by others)."""

    def __init__(self, container: str, working_dir: str = "/") -> None:
        super().__init__()
        self.container = container
        self.working_dir = working_dir

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        args = ["docker", "exec", "-i"]
        workdir = PurePosixPath(self.working_dir if cwd is None else cwd)
        if not workdir.is_absolute():
            workdir = PurePosixPath(self.working_dir) / workdir
        args += ["--workdir", str(workdir)]
        if user:
            args += ["--user", user]
        for key, value in (env or {}).items():
            args += ["--env", f"{key}={value}"]
        inner = cmd
        if timeout is not None:
            # Kill the process tree inside the container: `docker exec` does not forward signals.
            inner = ["/usr/bin/timeout", "-k", "5s", f"{timeout}s", *cmd]
        result = await subprocess(
            args + [self.container, *inner],
            input=input,
            timeout=timeout + 10 if timeout is not None else None,
            concurrency=concurrency,
        )
        if timeout is not None and result.returncode == 124:
            raise TimeoutError(f"Command timed out after {timeout} seconds")
        return result

    async def write_file(self, file: str, contents: str | bytes) -> None:
        path = self._abs(file)
        data = contents.encode() if isinstance(contents, str) else contents
        script = f"mkdir -p {shlex.quote(str(path.parent))} && cat > {shlex.quote(str(path))}"
        result = await self.exec(["sh", "-c", script], input=data)
        if not result.success:
            raise PermissionError(f"cannot write {path} in container {self.container}: "
                                  f"{result.stderr.strip()}")

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        path = self._abs(file)
        result = await subprocess(
            ["docker", "exec", self.container, "cat", str(path)], text=False
        )
        if result.returncode != 0:
            message = result.stderr.decode(errors="replace")
            if "No such file" in message:
                raise FileNotFoundError(f"{path} (container {self.container})")
            if "Is a directory" in message:
                raise IsADirectoryError(f"{path} (container {self.container})")
            raise PermissionError(f"cannot read {path}: {message.strip()}")
        return result.stdout.decode("utf-8", errors="replace") if text else result.stdout

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: Any,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        # The container's owner removes it (see rsr.harness.rsrt.verifier_copy).
        return None

    def _abs(self, file: str) -> PurePosixPath:
        path = PurePosixPath(file)
        return path if path.is_absolute() else PurePosixPath(self.working_dir) / path
