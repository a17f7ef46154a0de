"""Infrastructure errors: a sample that could not start for a reason that is not the agent's.

Every one carries a `kind` ("pull", "build", "image-missing", "sandbox-start", ...) so that the
run's accounting can count infrastructure failures by kind instead of scoring them as the
agent's. They live in the sandbox layer so that every layer above (sandboxes, verifier, suites)
can raise and classify them.
"""

from __future__ import annotations


class InfraError(RuntimeError):
    """A sample could not be set up; `kind` says which part of the infrastructure failed."""

    kind = "infra"


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
