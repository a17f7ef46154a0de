"""Artifacts and collect hooks (`artifacts`, `[[verifier.collect]]`), collected as Harbor 0.26 does.

After the agent (after each step's agent in a multi-step task) and before the tests: the collect
hooks of the main service run, then the main service's artifacts are copied out, then the
sidecars' hooks and artifacts. The agent's publish directory `/logs/artifacts` is always an entry
(first, unless the task declares it itself). Everything lands in one host directory per sample
laid out as Harbor lays out a trial's `artifacts/`: each entry at its source path without the
leading `/`, or at its `destination`, plus Harbor's `manifest.json` of every attempt. Hooks and
copies are best effort, as in Harbor: a failure is recorded, never raised.

The directory is kept after the sample (under the rsr cache, `artifacts/`), and the result lists
every collected file as (path, sha256, bytes) for the evidence a regrade uses.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import io
import json
import math
import re
import shutil
import tarfile
import tempfile
import uuid
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, Field

from rsr.tasks.load import LoadedTask
from rsr.tasks.models import ArtifactSection, CollectSection

CONVENTION_DIR = "/logs/artifacts"
MAIN_SERVICE = "main"
MANIFEST = "manifest.json"
ENTRY_LIMIT = 256 * 1024 * 1024
"""Bytes one entry's archive may have; a larger one is recorded as failed."""


class ArtifactFile(BaseModel):
    """One collected file: its path below the sample's artifacts directory, digest and size."""

    path: str
    sha256: str
    bytes: int


class ManifestEntry(BaseModel):
    """One collection attempt, in Harbor's `manifest.json` format."""

    source: str
    destination: str
    type: Literal["file", "directory"]
    status: Literal["ok", "failed", "empty", "skipped"]
    service: str | None = None
    exclude: list[str] = Field(default_factory=list)


class HookRun(BaseModel):
    command: str
    service: str
    returncode: int | None = None
    error: str | None = None


class Collected(BaseModel):
    """What one collection pass brought out of the sandbox."""

    dir: str
    """The host directory holding the files ("" when nothing was collected)."""
    files: list[ArtifactFile] = Field(default_factory=list)
    manifest: list[ManifestEntry] = Field(default_factory=list)
    hooks: list[HookRun] = Field(default_factory=list)

    def evidence(self) -> list[tuple[str, str, int]]:
        return [(f.path, f.sha256, f.bytes) for f in self.files]


def entries(task: LoadedTask) -> list[ArtifactSection]:
    """The collection set of one pass: the task's entries (and its step's), the convention
    directory first unless declared (Harbor's `with_convention_entry`)."""
    found = list(task.config.artifacts)
    if task.step is not None:
        found += task.config.steps[task.step].artifacts
    if not any(_is_convention(a) for a in found):
        found.insert(0, ArtifactSection(source=CONVENTION_DIR))
    return found


def _is_convention(a: ArtifactSection) -> bool:
    return a.source.rstrip("/") == CONVENTION_DIR and (a.service or MAIN_SERVICE) == MAIN_SERVICE


def host_relative(a: ArtifactSection) -> PurePosixPath:
    """Where an entry lands below the artifacts directory (Harbor's `artifact_host_path`)."""
    parts = [p for p in PurePosixPath(a.destination or a.source).parts if p not in ("", "/", "..")]
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def sample_artifacts_dir(task: LoadedTask, sample_id: str | None = None) -> Path:
    """A fresh host directory for one sample's artifacts, kept after the run."""
    from rsr.sandbox.cache import cache_dir

    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", task.name).strip("-.")[:60] or "task"
    path = cache_dir("artifacts") / f"{slug}-{sample_id or uuid.uuid4().hex[:12]}"
    path.mkdir(parents=True, exist_ok=True)
    return path


async def collect(task: LoadedTask, dest: Path) -> Collected:
    """Run the pass's collect hooks and copy its artifacts into `dest` (see the module doc)."""
    dest.mkdir(parents=True, exist_ok=True)
    out = Collected(dir=str(dest))
    hooks = list(task.config.verifier.collect)
    wanted = entries(task)
    claimed: list[PurePosixPath] = []
    for phase in ("main", "sidecars"):
        def here(service: str | None, phase: str = phase) -> bool:
            return ((service or MAIN_SERVICE) == MAIN_SERVICE) == (phase == "main")

        for hook in (h for h in hooks if here(h.service)):
            out.hooks.append(await _run_hook(hook))
        for entry in (a for a in wanted if here(a.service)):
            out.manifest.append(await _download(entry, dest, claimed))
    manifest = dest / MANIFEST
    if out.manifest:
        previous = json.loads(manifest.read_text()) if manifest.is_file() else []
        manifest.write_text(json.dumps([*previous, *(m.model_dump() for m in out.manifest)], indent=2))
    out.files = await asyncio.to_thread(_inventory, dest)
    if not out.files:
        # Nothing came out (most samples: an empty publish dir): keep the record, not the directory.
        await asyncio.to_thread(shutil.rmtree, dest, True)
        out.dir = ""
    return out


def _inventory(root: Path) -> list[ArtifactFile]:
    files = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST:
            continue
        data = path.read_bytes()
        files.append(ArtifactFile(path=rel, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data)))
    return files


def _service_sandbox(service: str | None) -> Any:
    from inspect_ai.util import sandbox

    return sandbox() if (service or MAIN_SERVICE) == MAIN_SERVICE else sandbox(service)


async def _run_hook(hook: CollectSection) -> HookRun:
    run = HookRun(command=hook.command, service=hook.service)
    try:
        sbx = _service_sandbox(hook.service)
        # Harbor: bash for the main service (its images have it), POSIX sh for sidecars.
        shell = "bash" if hook.service == MAIN_SERVICE else "sh"
        result = await sbx.exec([shell, "-c", hook.command], timeout=max(1, math.ceil(hook.timeout_sec)),
                                user=str(hook.user) if hook.user is not None else None, timeout_retry=False)
        run.returncode = result.returncode
        if not result.success:
            run.error = (result.stderr or result.stdout or "")[-500:]
    except Exception as e:  # noqa: BLE001 - best effort, as in Harbor
        run.error = f"{type(e).__name__}: {e}"
    return run


async def _download(entry: ArtifactSection, dest: Path, claimed: list[PurePosixPath]) -> ManifestEntry:
    rel = host_relative(entry)
    record = ManifestEntry(source=entry.source, destination=f"artifacts/{rel.as_posix()}" if str(rel) != "." else
                           "artifacts", type="file" if PurePosixPath(entry.source).suffix else "directory",
                           status="failed", service=entry.service, exclude=list(entry.exclude))
    # Harbor keeps the first claimant of a host path (or of one nested in it) and skips the rest.
    if any(c == rel or c in rel.parents or rel in c.parents for c in claimed):
        record.status = "skipped"
        return record
    claimed.append(rel)
    try:
        from rsr.sandbox import engine
        from rsr.sandbox.backing import container_of

        container = await container_of(_service_sandbox(entry.service))
        if container is None:
            return record  # a sandbox without engine access: nothing can be copied out
        stream, stat = await asyncio.to_thread(engine.api().get_archive, container, entry.source)
        data = await asyncio.to_thread(read_capped, stream)
        if data is None:
            return record  # over the cap: the agent can fill its publish dir, not the host's memory
        is_dir = bool(stat.get("mode", 0) & (1 << 31))
        record.type = "directory" if is_dir else "file"
        if not is_dir:
            record.exclude = []
        placed = await asyncio.to_thread(_unpack, data, dest / rel, entry.exclude if is_dir else [])
        record.status = "ok" if placed or not (is_dir and _is_convention(entry)) else "empty"
    except Exception:  # noqa: BLE001 - a declared artifact the agent never produced
        record.status = "failed"
    return record


def read_capped(stream: Any, limit: int = ENTRY_LIMIT) -> bytes | None:
    chunks, total = [], 0
    for chunk in stream:
        total += len(chunk)
        if total > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def filtered_archive(archive: bytes, exclude: list[str]) -> bytes:
    """The archive without excluded members, links, special files and setuid/setgid bits."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(archive)) as src, tarfile.open(fileobj=out, mode="w") as tar:
        members = src.getmembers()
        top = members[0].name.split("/")[0] if members else ""
        for m in members:
            inner = m.name[len(top):].lstrip("/")
            if not (m.isfile() or m.isdir()) or (inner and exclude and _excluded(inner, exclude)):
                continue
            m.mode &= 0o1777
            tar.addfile(m, src.extractfile(m) if m.isfile() else None)
    return out.getvalue()


def _excluded(rel: str, patterns: list[str]) -> bool:
    # tar --exclude matches a pattern against the member path and each of its trailing parts.
    parts = rel.split("/")
    return any(fnmatch.fnmatch("/".join(parts[i:]), p) or fnmatch.fnmatch(parts[i], p)
               for p in patterns for i in range(len(parts)))


def _unpack(archive: bytes, target: Path, exclude: list[str]) -> int:
    """Unpack an engine archive (its top entry is the source's basename) at `target`; returns
    how many entries were placed. Links and special files are dropped (tarfile's data filter)."""
    placed = 0
    staging = Path(tempfile.mkdtemp(prefix=".rsr-artifact-", dir=target.parent if target.parent.exists() else None))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            members = tar.getmembers()
            top = members[0].name.split("/")[0] if members else ""
            keep = []
            for m in members:
                inner = m.name[len(top):].lstrip("/")
                if inner and exclude and _excluded(inner, exclude):
                    continue
                if m.issym() or m.islnk() or not (m.isfile() or m.isdir()):
                    continue
                keep.append(m)
                placed += 1 if inner else 0
            tar.extractall(staging, members=keep, filter="data")
        source = staging / top
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir() and source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            if target.exists():
                shutil.rmtree(target) if target.is_dir() else target.unlink()
            shutil.move(str(source), target)
        return placed if source.is_dir() or target.is_dir() else 1
    finally:
        shutil.rmtree(staging, ignore_errors=True)
