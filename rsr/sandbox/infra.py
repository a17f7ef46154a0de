"""Infrastructure failures: the sample could not be given a working sandbox or verifier.

Such a sample says nothing about the agent, yet leaving it out of the headline would inflate
the score of exactly the runs that went worst (Inspect averages scored samples only). So a
sample whose sandbox cannot start still ends *scored*: the sandbox provider catches the
`InfraError` at sample start and hands Inspect an `InfraSandbox` that carries it; the task's
setup step (`rsr.suites.sandbox_guard`) ends the sample before any agent runs; the
`rsr/verifier` scorer turns it into a failing score with `metadata.infra = {"kind",
"message"}`, which the headline counts as a failure and the `infra_errors` and
`passed_excl_infra` metrics count apart.

A failure after the sandbox started (the container killed from outside, the engine gone, the
model's API failing, the host's disk full) reaches the same scorer another way: the provider
or harness raises an `InfraError` (and notes it in the sample's store), Inspect retries the
sample while `retry_on_error` allows, and on the last attempt, because rsr's tasks set
`score_on_error`, the scorer runs and classifies what ended the sample (rsr.verify.outcome).

Every error carries a `kind` ("pull", "build", "image-missing", "sandbox", "sandbox-lost",
"engine", "model", "verifier", "disk", "network", "setup") so that the run's accounting
counts infrastructure failures by kind. They live in the sandbox layer so that every layer
above (sandboxes, verifier, suites) can raise and classify them. Nothing the agent writes
decides a kind: each is read from the engine, the host or the model API's own failure.
"""

from __future__ import annotations

from typing import Any, Literal, overload

from inspect_ai.util import ExecResult, SandboxEnvironment, SandboxUnavailableError

INFRA_KEY = "infra"
"""Score metadata key: `{"kind": ..., "message": ...}` on a sample ended by an InfraError."""
INFRA_STORE = "rsr:infra"
"""Sample store key: the first InfraError raised while the sample ran (`as_metadata()`)."""


class InfraError(RuntimeError):
    """The environment could not be provided, through no doing of the agent's.

    `kind` names the stage: "build" (the image did not build or is absent), "pull" (a registry
    pull failed), "sandbox" (the container could not be created or started), "verifier" (the
    tests could not be installed or started)."""

    kind: str = "sandbox"

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind

    def as_metadata(self) -> dict[str, str]:
        return {"kind": self.kind, "message": str(self)}


class InfraSandbox(SandboxEnvironment):
    """The stand-in a provider returns for a sample whose sandbox could not start.

    Inspect's sample start still copies the sample's files and runs its setup script in the
    environment it was handed; those are accepted and ignored, so the sample reaches the
    task's setup step, which ends it with `error` (no agent runs, the scorer reads `error`).
    Nothing here ever runs a command: an exec reports success with no output, a read finds no
    file."""

    def __init__(self, error: InfraError) -> None:
        super().__init__()
        self.error = error

    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None, timeout: int | None = None,
                   timeout_retry: bool = True, concurrency: bool = True) -> ExecResult[str]:
        return ExecResult(success=True, returncode=0, stdout="", stderr="")

    async def write_file(self, file: str, contents: str | bytes) -> None:
        return None

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        raise FileNotFoundError(f"{file}: the sandbox did not start ({self.error.kind}: {self.error})")

    @classmethod
    async def sample_cleanup(cls, task_name: str, config: Any, environments: dict[str, SandboxEnvironment],
                             interrupted: bool) -> None:
        return None


class SandboxLostError(InfraError, SandboxUnavailableError):
    """The sample's container stopped or vanished from outside (`docker kill`, an engine
    restart), not by the agent's doing (an OOM kill or a storage-limit stop is the agent's).
    Also Inspect's SandboxUnavailableError: Inspect's own probes (the root-access probe at
    sample start) and tool calls handle it as a sandbox that is gone, and the scorer counts it."""

    kind = "sandbox-lost"


class EngineError(InfraError, SandboxUnavailableError):
    """The Docker engine stopped answering (or answered with a server error) mid-sample."""

    kind = "engine"


class DiskFullError(InfraError):
    """The host's disk (logs, evidence, rsr's cache, Docker's data) has no room left."""

    kind = "disk"


def note_infra(error: InfraError) -> None:
    """Record in the running sample's store what failed under it (the first failure wins: later
    ones are its consequences); the scorer reads it if the sample ends in an error."""
    from inspect_ai.util import store

    try:
        kept = store()
        if kept.get(INFRA_STORE) is None:
            kept.set(INFRA_STORE, error.as_metadata())
    except Exception:  # outside a sample (a regrade, a test): nothing to record into
        return


def noted_infra() -> dict[str, str] | None:
    from inspect_ai.util import store

    try:
        found = store().get(INFRA_STORE)
    except Exception:
        return None
    return found if isinstance(found, dict) else None


def infra_error_of(env: Any) -> InfraError | None:
    """The InfraError a sample's sandbox carries (through Inspect's recording proxy), if any."""
    env = getattr(env, "_sandbox", env)
    return env.error if isinstance(env, InfraSandbox) else None


def current_infra_error() -> InfraError | None:
    """The InfraError of the running sample's default sandbox; None when it has a working one
    (or none at all)."""
    from inspect_ai.util import sandbox

    try:
        env = sandbox()
    except (ProcessLookupError, ValueError):
        return None
    return infra_error_of(env)


class ImageBuildError(InfraError):
    """A task's image could not be built or found; the message carries the engine's output."""

    kind = "build"


class ImagePullError(ImageBuildError):
    """A task's prebuilt image could not be pulled; the message names the image, the
    registry's error and the fix (`reason`: the registry's error alone)."""

    kind = "pull"

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class ImageMissingError(ImageBuildError):
    """The run may neither pull nor build (`-T images=never`, `--sandbox-prebuilt`) and the
    image is not on the engine."""

    kind = "image-missing"
