"""Task images in a container registry: build once, push, and record where each one went.

A Kubernetes cluster cannot build images, so every image a task's sandbox uses must be
pulled from a registry. `rsr images build --push REGISTRY` pushes them and writes an
`ImageMap`: for each local image (whose tag already carries the digest of its build
context, see `rsr.sandbox.compose.image_tag`) the pushed reference pinned by content digest,
`REGISTRY/rsr-task/NAME@sha256:...`. The k8s values generator looks images up in this map
and refuses a task whose image is not there, so a run never pulls a stale or missing image.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rsr.errors import RsrError
from rsr.sandbox.cache import cache_dir
from rsr.sandbox.compose import MAIN_SERVICE, compose_spec
from rsr.tasks.load import LoadedTask

IMAGE_MAP_ENV = "RSR_K8S_IMAGES"


class ImageRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="Task name (directory name).")
    service: str = Field(description="Compose service the image belongs to ('default' = the agent's).")
    local: str = Field(description="The image as the Docker compose file names it.")
    reference: str = Field(description="Where the cluster pulls it: REGISTRY/REPO@sha256:DIGEST.")
    user: str = Field("", description="The image's configured USER ('' = root): the default exec user.")
    built: bool = Field(True, description="False for a prebuilt image mirrored (or used as-is).")


class ImageMap(BaseModel):
    """`$RSR_CACHE_DIR/images/<registry-slug>.json`: local image -> pushed reference."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    registry: str
    images: dict[str, ImageRecord] = Field(default_factory=dict, description="Keyed by `local`.")
    source_path: Path | None = Field(None, exclude=True)

    def lookup(self, local: str) -> ImageRecord | None:
        return self.images.get(local)

    def add(self, record: ImageRecord) -> None:
        self.images[record.local] = record

    def save(self, path: Path | None = None) -> Path:
        path = path or self.source_path or image_map_path(self.registry)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        self.source_path = path
        return path


def cache_base() -> Path:
    return cache_dir()


def registry_slug(registry: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", registry.lower()).strip("-.") or "registry"


def image_map_path(registry: str) -> Path:
    return cache_base() / "images" / f"{registry_slug(registry)}.json"


def load_image_map(path: Path) -> ImageMap:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise RsrError(f"{path}: no such image map; create it with "
                       "`rsr images build SUITE|PATH --push REGISTRY`") from e
    except json.JSONDecodeError as e:
        raise RsrError(f"{path}: not JSON: {e}") from e
    try:
        found = ImageMap.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<top>'}: {err['msg']}"
                             for err in e.errors())
        raise RsrError(f"{path}: {problems}") from e
    found.source_path = path
    return found


def find_image_map(images: str | Path | None = None) -> ImageMap:
    """The image map a k8s run uses: a file path, a registry name (its cached map), the file
    named by $RSR_K8S_IMAGES, or the only map in the cache, in that order."""
    if images:
        path = Path(images).expanduser()
        if path.suffix == ".json" or path.exists():
            return load_image_map(path)
        return load_image_map(image_map_path(str(images)))
    if os.environ.get(IMAGE_MAP_ENV):
        return load_image_map(Path(os.environ[IMAGE_MAP_ENV]).expanduser())
    folder = cache_base() / "images"
    found = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if len(found) == 1:
        return load_image_map(found[0])
    if not found:
        raise RsrError(f"no image map for the k8s sandbox in {folder}: push the task images first "
                       "with `rsr images build SUITE|PATH --push REGISTRY` (a cluster cannot build "
                       f"images), or name a map with -T images=FILE or ${IMAGE_MAP_ENV}")
    raise RsrError(f"{len(found)} image maps in {folder} ({', '.join(p.name for p in found)}): "
                   f"choose one with -T images=FILE|REGISTRY or ${IMAGE_MAP_ENV}")


@dataclass(frozen=True)
class TaskImage:
    """One image of a task's sandbox, as the Docker compose file names it."""

    service: str
    local: str
    built: bool


def task_images(task: LoadedTask, force_build: bool = False) -> list[TaskImage]:
    """Every image the task's sandbox runs, main service first: a prebuilt `docker_image` as
    it is named (pulled, not built), unless `force_build` (then rsr's tag, built)."""
    services = compose_spec(task, force_build=force_build)["services"]
    out = []
    for name in sorted(services, key=lambda n: (n != MAIN_SERVICE, n)):
        svc = services[name]
        image = svc.get("image")
        if not image:
            raise RsrError(f"task {task.name}: service {name!r} has neither an image nor a build")
        out.append(TaskImage(name, str(image), "build" in svc))
    return out


def missing_image_error(task: LoadedTask, image: TaskImage, images: ImageMap) -> RsrError:
    where = images.source_path or image_map_path(images.registry)
    return RsrError(
        f"task {task.name}: image {image.local} (service {image.service!r}) is not in the registry "
        f"map {where}; the cluster could not pull it. Build and push it with "
        f"`rsr images build {task.paths.task_dir} --push {images.registry}` "
        "(or the whole suite: `rsr images build SUITE --push REGISTRY`)")


# -- pushing (docker CLI) --------------------------------------------------------------------

def _docker(args: list[str], timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def local_image_exists(image: str) -> bool:
    return _docker(["image", "inspect", image], timeout=60).returncode == 0


def image_user(image: str) -> str:
    proc = _docker(["image", "inspect", image, "--format", "{{.Config.User}}"], timeout=60)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def remote_name(registry: str, local: str) -> str:
    """`rsr-task/x:abc` -> `REGISTRY/rsr-task/x:abc`; a prebuilt `postgres:16` keeps its path
    under the registry (`REGISTRY/library/postgres:16` stays readable and collision-free)."""
    name = local.split("@", 1)[0]
    first = name.split("/", 1)[0]
    if "/" in name and ("." in first or ":" in first or first == "localhost"):
        name = name.split("/", 1)[1]  # drop the original registry host
    elif "/" not in name:
        name = f"library/{name}"
    if ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return f"{registry.rstrip('/')}/{name}"


_PUSH_DIGEST = re.compile(r"digest: (sha256:[0-9a-f]{64})")


def push_image(registry: str, local: str) -> str:
    """Tag and push one local image; returns `REGISTRY/REPO@sha256:...` (pinned by digest)."""
    remote = remote_name(registry, local)
    tagged = _docker(["tag", local, remote], timeout=60)
    if tagged.returncode != 0:
        raise RsrError(f"docker tag {local} {remote} failed: {tagged.stderr.strip()[-500:]}")
    pushed = _docker(["push", remote])
    output = (pushed.stdout + pushed.stderr).strip()
    if pushed.returncode != 0:
        _docker(["rmi", remote], timeout=60)  # untag only: the local image stays
        raise RsrError(f"pushing {local} to {registry} failed (is the registry reachable and "
                       f"are you logged in? `docker login {registry.split('/')[0]}`):\n"
                       f"{output[-800:]}")
    m = _PUSH_DIGEST.search(output)
    if not m:
        raise RsrError(f"docker push {remote} succeeded but printed no digest:\n{output[-500:]}")
    repository = remote.rsplit(":", 1)[0]  # remote_name always ends in a tag
    return f"{repository}@{m.group(1)}"
