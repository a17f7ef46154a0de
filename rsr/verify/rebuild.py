"""A regrade's verification, rebuilt from the task and its pristine image, never from the submission.

A submitted bundle is bytes its submitter wrote (and re-hashed): its kept-changes archive, its
changes record (plan, kept list, the agent container's Env, working directory and limits) and
its sample record. Of these only the archive's own members and the deletions are the agent's
work; everything else is derived here:

- the plan (which changes may reach the checker) from the task's integrity rules, workdir and
  `[verifier] allow_changes` (or, for a task that declares none, the regrader's own inferred
  record for its digest, never the submitter's);
- the kept, added, directory and plugin lists from the archive's members, judged one by one
  against the pristine image's layers (what the audit reads);
- the verification container's Env, working directory and limits from the task and the image.

An archive that carries anything the live capture never keeps (a member outside the plan's
deliverable roots, a special file, a duplicate or non-canonical name, a member written through
a link, a hard link to anything but an earlier member) refuses the regrade: an honest capture
cannot have produced it. The judged members are written again into an archive of our own, so
what the engine unpacks is exactly what was judged (no tar dialect read one way here and
another way by the engine).
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from rsr.errors import RsrError
from rsr.tasks.load import LoadedTask
from rsr.verify import inferred
from rsr.verify.deliverables import Changes, NoDeliverables, plan_for, plugin_registration, why_dropped
from rsr.verify.evidence import EvidenceError
from rsr.verify.startup_files import startup_paths

__all__ = ["ForgedArchive", "task_image", "task_template", "rebuild_changes"]


class ForgedArchive(EvidenceError):
    """A submitted archive or deletion list that no capture of an agent's work could produce."""


def task_image(task: LoadedTask) -> tuple[str, dict[str, Any]]:
    """The task's own image reference and the engine's record of it (RsrError: not on this engine)."""
    from docker.errors import ImageNotFound

    from rsr.sandbox import engine
    from rsr.sandbox.spec import docker_config

    ref = docker_config(task).image
    try:
        return ref, engine.api().inspect_image(ref)
    except ImageNotFound as e:
        raise RsrError(f"the task's image {ref} is not on this engine (build it: rsr images build)") from e


def task_template(task: LoadedTask, image_info: dict[str, Any]) -> dict[str, Any]:
    """The verification container's configuration as the sandbox would create the agent's: the
    image's Env with the task's environment over it, the task's (else the image's) working
    directory, the task's limits, and no network (the agent's is gone)."""
    from rsr.sandbox.docker_api import pids_limit
    from rsr.sandbox.spec import docker_config

    cfg = docker_config(task)
    env = {e.split("=", 1)[0]: e for e in (image_info.get("Config") or {}).get("Env") or []}
    env.update({k: f"{k}={v}" for k, v in cfg.env.items()})
    memory = int(cfg.memory_mb) * 1024 * 1024
    return {"Config": {"Env": list(env.values()),
                       "WorkingDir": cfg.workdir or (image_info.get("Config") or {}).get("WorkingDir") or "/",
                       "Labels": {}},
            "HostConfig": {"NanoCpus": int(cfg.cpus * 1e9), "Memory": memory, "MemorySwap": memory,
                           "PidsLimit": pids_limit(cfg.pids_limit), "DeviceRequests": None,
                           "NetworkMode": "none"}}


def image_layers(image_info: dict[str, Any]) -> list[str]:
    """The image's layer directories on this host, top first (overlay2)."""
    driver = image_info.get("GraphDriver") or {}
    data = driver.get("Data") or {}
    layers = [data.get("UpperDir") or "", *(data.get("LowerDir") or "").split(":")]
    found = [d for d in layers if d]
    if driver.get("Name") != "overlay2" or not found or not all(os.path.isdir(d) for d in found):
        raise RsrError(f"the image's layers are not readable from this host (storage driver "
                       f"{driver.get('Name')!r}): a regrade judges the archive against them")
    return found


class _Image:
    """Lookups in the pristine image's layers (whiteouts and opaque directories are not
    interpreted: a path any layer has counts as the image's, the cautious reading)."""

    def __init__(self, layers: list[str]) -> None:
        self.layers = layers

    def has(self, path: str) -> bool:
        rel = path.lstrip("/")
        return any(os.path.lexists(os.path.join(d, rel)) for d in self.layers)

    def is_link(self, path: str) -> bool:
        rel = path.lstrip("/")
        for d in self.layers:
            candidate = os.path.join(d, rel)
            if os.path.lexists(candidate):
                return os.path.islink(candidate)
        return False


def _canonical(name: str, what: str) -> str:
    """'/'+name, refusing anything an honest capture does not write (absolute, '.', '..', '//')."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ForgedArchive(f"{what} {name!r} is not a canonical path")
    return "/" + name


def _ancestors(path: str) -> Iterable[str]:
    parents = list(PurePosixPath(path).parents)[:-1]  # without '/'
    return (str(p) for p in reversed(parents))


def rebuild_changes(task: LoadedTask, archive: bytes, deleted: list[str], mode: Literal["strict", "warn"],
                    workdir: Path, image: tuple[str, dict[str, Any]] | None = None,
                    limit_bytes: int | None = None) -> Changes:
    """The Changes a regrade applies: `archive`'s members and the `deleted` paths judged under
    the task's plan against its pristine image (ForgedArchive when one could not come from a
    capture), re-archived into `workdir`."""
    _, info = image or task_image(task)
    template = task_template(task, info)
    try:
        plan = plan_for(mode, template["Config"]["WorkingDir"], task.config.verifier.allow_changes,
                        inferred.usable(task.digest) if mode == "strict" else None,
                        startup_paths(task.test_files(), task.config.verifier.user))
    except NoDeliverables as e:
        raise RsrError(f"{task.name}: {e}: a strict regrade needs them; "
                       f"{inferred.refusal([task.name], str(task.paths.task_dir.parent))}") from e
    pristine = _Image(image_layers(info))
    if limit_bytes is None and task.config.environment.storage_mb:
        limit_bytes = int(task.config.environment.storage_mb) * 1024 * 1024
    found: dict[str, list[str]] = {"kept": [], "added": [], "directories": [], "plugins": []}
    links: set[str] = set()
    seen: set[str] = set()
    carried = 0
    out_path = workdir / "changes.tar"

    def refuse_through_link(path: str, what: str) -> None:
        for parent in _ancestors(path):
            if parent in links or (parent not in seen and pristine.is_link(parent)):
                raise ForgedArchive(f"{what} {path} lies beyond the link {parent}: it would be written elsewhere")

    try:
        source = tarfile.open(fileobj=io.BytesIO(archive), mode="r:")
    except tarfile.TarError as e:
        raise ForgedArchive(f"the kept-changes archive is not a tar archive: {e}") from e
    with source, tarfile.open(out_path, mode="w", format=tarfile.PAX_FORMAT) as out:
        for member in source:
            path = _canonical(member.name, "archive member")
            if path in seen:
                raise ForgedArchive(f"archive member {path} appears twice")
            if not (member.isreg() or member.isdir() or member.issym() or member.islnk()) or member.issparse():
                raise ForgedArchive(f"archive member {path} is a special file (never a deliverable)")
            refuse_through_link(path, "archive member")
            data = source.extractfile(member).read() if member.isreg() else None  # type: ignore[union-attr]
            why = why_dropped(path, plan, content=data)
            if why is not None:
                raise ForgedArchive(f"archive member {path} is {why}: a capture never keeps it")
            if member.islnk():
                target = _canonical(member.linkname, f"hard link {path} to")
                if target not in seen or target in links:
                    raise ForgedArchive(f"hard link {path} points at {target}, which is not a file of the archive")
            if member.issym():
                links.add(path)
            seen.add(path)
            found["kept"].append(path)
            if not pristine.has(path):
                found["added"].append(path)
            if member.isdir():
                found["directories"].append(path)
            if data is not None:
                carried += len(data)
                if limit_bytes is not None and carried > limit_bytes:
                    raise ForgedArchive(f"the archive's files add up to more than {limit_bytes // 2**20} MB, above "
                                        "the task's storage limit")
                if plugin_registration(path, data):
                    found["plugins"].append(f"{path}: registers a pytest plugin (pytest imports it by itself)")
            out.addfile(member, io.BytesIO(data) if data is not None else None)
    kept_deleted: list[str] = []
    for path in deleted:
        if not isinstance(path, str) or not path.startswith("/"):
            raise ForgedArchive(f"deleted path {path!r} is not a canonical path")
        path = _canonical(path[1:], "deleted path")
        refuse_through_link(path, "deleted path")
        why = why_dropped(path, plan, deleted=True)
        if why is not None:
            raise ForgedArchive(f"deleted path {path} is {why}: a capture never keeps its deletion")
        kept_deleted.append(path)
    digest = hashlib.sha256(out_path.read_bytes()).hexdigest()
    return Changes(image=info["Id"], plan=plan, archive_path=str(out_path), archive_sha256=digest,
                   archive_bytes=out_path.stat().st_size, deleted=kept_deleted, container=template, **found)
