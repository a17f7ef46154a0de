"""Where a task's image comes from (the run's image policy), and pulling prebuilt images.

Real Terminal-Bench tasks name a prebuilt image (`[environment] docker_image`) and also ship
`environment/Dockerfile`. As under Harbor, a prebuilt image is pulled when the engine lacks
it; the policy chooses otherwise per run:

- `auto` (default): the local image if the engine has it; else pull the prebuilt image; else
  build from environment/Dockerfile. A failed pull falls back to the Dockerfile where there
  is one (and says so).
- `force-build` (Harbor's `--force-build`): build from the task's Dockerfile under rsr's own
  content tag, ignoring `docker_image`.
- `never`: nothing is pulled or built (what Inspect's `--sandbox-prebuilt` means too).

Pulls go through the Engine API, with at most one progress line per layer state change every
few seconds on stderr, and report the image's id and the repo digest the pull resolved to.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Literal, get_args

from docker.errors import APIError, ImageNotFound
from docker.utils import parse_repository_tag

from rsr.errors import RsrError
from rsr.sandbox import engine
from rsr.sandbox.infra import ImagePullError

ImagePolicy = Literal["auto", "force-build", "never"]
IMAGE_POLICIES: tuple[str, ...] = get_args(ImagePolicy)
DEFAULT_POLICY: ImagePolicy = "auto"


def check_policy(value: str) -> ImagePolicy:
    if value not in IMAGE_POLICIES:
        raise RsrError(f"-T images={value!r}: expected one of {', '.join(IMAGE_POLICIES)}")
    return value  # type: ignore[return-value]


def split_images_option(value: str | None) -> tuple[ImagePolicy, str | None]:
    """`-T images=` is the image policy, or (for `-T sandbox=k8s`) the image map's file or
    registry: (policy, map)."""
    if value is None or value == "":
        return DEFAULT_POLICY, None
    if value in IMAGE_POLICIES:
        return value, None  # type: ignore[return-value]
    return DEFAULT_POLICY, value


@dataclass(frozen=True)
class ResolvedImage:
    """The image a sample's container runs, as the engine knows it (recorded in the log)."""

    name: str
    id: str
    repo_digests: list[str]
    source: Literal["local", "pulled", "built", "compose"]
    """compose: Inspect's compose provider got it (pulled or built by `docker compose`)."""
    policy: str
    note: str = ""

    def digest(self) -> str | None:
        """The repo digest of `name`'s repository, when the engine has one (pulled or pushed)."""
        repo = parse_repository_tag(self.name)[0]
        for entry in self.repo_digests:
            if entry.rsplit("@", 1)[0] == repo:
                return entry.rsplit("@", 1)[1]
        return None

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "id": self.id, "digest": self.digest(),
                               "repo_digests": self.repo_digests, "source": self.source,
                               "policy": self.policy}
        if self.note:
            out["note"] = self.note
        return out


def resolved(name: str, source: Literal["local", "pulled", "built"], policy: str, note: str = "",
             info: dict[str, Any] | None = None) -> ResolvedImage:
    info = info if info is not None else engine.api().inspect_image(name)
    return ResolvedImage(name=name, id=info["Id"], repo_digests=list(info.get("RepoDigests") or []),
                         source=source, policy=policy, note=note)


def local_image(name: str, policy: str) -> ResolvedImage | None:
    """The image as this engine already has it (one inspect), None when it is absent."""
    try:
        info = engine.api().inspect_image(name)
    except ImageNotFound:
        return None
    return resolved(name, "local", policy, info=info)


def image_present(name: str) -> bool:
    try:
        engine.api().inspect_image(name)
    except ImageNotFound:
        return False
    return True


class PullProgress:
    """Progress of one pull on stderr: a line when it starts and ends, and in between, every
    `interval` seconds at most, one line per layer whose state changed (or that kept
    downloading for `quiet` seconds without a line)."""

    def __init__(self, image: str, out: Any = None, interval: float = 3.0, quiet: float = 15.0) -> None:
        self.image = image
        self.out = out
        self.interval = interval
        self.quiet = quiet
        self.started = time.monotonic()
        self.last_flush = self.started
        self.layers: dict[str, str] = {}
        self.shown: dict[str, tuple[str, float]] = {}
        self.sizes: dict[str, tuple[int, int]] = {}

    def _say(self, text: str) -> None:
        print(f"[pull {self.image}] {text} ({time.monotonic() - self.started:.1f} s)",
              file=self.out or sys.stderr, flush=True)

    def begin(self) -> None:
        self._say("pulling")

    def feed(self, chunk: dict[str, Any]) -> None:
        layer, status = chunk.get("id"), chunk.get("status")
        if not layer or not status or status.startswith(("Pulling from", "Digest:", "Status:")):
            return
        self.layers[layer] = status
        detail = chunk.get("progressDetail") or {}
        if detail.get("total"):
            self.sizes[layer] = (int(detail.get("current") or 0), int(detail["total"]))
        if time.monotonic() - self.last_flush >= self.interval:
            self.flush()

    def flush(self) -> None:
        now = time.monotonic()
        self.last_flush = now
        for layer, status in self.layers.items():
            shown = self.shown.get(layer)
            if shown is not None and shown[0] == status and (status != "Downloading" or now - shown[1] < self.quiet):
                continue
            self.shown[layer] = (status, now)
            size = ""
            if status in ("Downloading", "Extracting") and layer in self.sizes:
                current, total = self.sizes[layer]
                size = f" {current / 2**20:.1f}/{total / 2**20:.1f} MB"
            self._say(f"layer {layer}: {status}{size}")

    def done(self, image: ResolvedImage) -> None:
        self._say(f"pulled {image.digest() or image.id}")

    def failed(self) -> None:
        self._say("failed")


def pull_fix(image: str, has_dockerfile: bool) -> str:
    if has_dockerfile:
        return "build it from the task's environment/Dockerfile instead with `-T images=force-build`"
    return (f"make the image available to this engine (`docker pull {image}` where its registry is "
            f"reachable, or `docker load -i FILE` of a saved copy), then run again")


def pull_image(image: str, *, task: str, has_dockerfile: bool, policy: str = DEFAULT_POLICY,
               out: Any = None) -> ResolvedImage:
    """Pull `image` through the engine; ImagePullError naming the image, the registry's error
    and the fix (`has_dockerfile`: whether the task could be built instead)."""
    repository, tag = parse_repository_tag(image)
    if tag is None:
        tag = "latest"
    progress = PullProgress(image, out)
    progress.begin()
    error: str | None = None
    try:
        for chunk in engine.api().pull(repository, tag=tag, stream=True, decode=True):
            if "error" in chunk:
                error = str(chunk.get("error")).strip()
                break
            progress.feed(chunk)
    except APIError as e:
        error = str(getattr(e, "explanation", None) or e).strip()
    except OSError as e:  # the engine's connection dropped mid-pull
        error = f"{type(e).__name__}: {e}"
    if error is None and not image_present(image):
        error = "the engine reported no error but does not have the image afterwards"
    if error is not None:
        progress.failed()
        raise ImagePullError(f"pulling image {image!r} for task {task!r} failed: {error}; "
                             f"{pull_fix(image, has_dockerfile)}", reason=error)
    if time.monotonic() - progress.started >= progress.interval:  # a short pull: two lines only
        progress.flush()
    found = resolved(image, "pulled", policy)
    progress.done(found)
    return found

