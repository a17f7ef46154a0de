"""Write one sample's evidence bundle from a verifier result (the scorer calls this)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import Any

from rsr.tasks.load import LoadedTask
from rsr.verify.evidence import (
    BlobStore,
    ChangesEvidence,
    ImageEvidence,
    SampleEvidence,
    VerifierInputs,
    VerifierOutputs,
)

__all__ = ["keep_evidence", "tests_digest"]


def tests_digest(task: LoadedTask) -> str:
    """The test files the verifier installs, by path, content and executable bit (no mtimes, so
    a fresh checkout of the same tests gives the same digest)."""
    h = hashlib.sha256()
    for container_path, host_path in sorted(task.test_files().items()):
        data = host_path.read_bytes()
        executable = os.access(host_path, os.X_OK) or container_path.endswith(".sh")
        h.update(f"{container_path}\0{hashlib.sha256(data).hexdigest()}\0{int(executable)}\n".encode())
    return "sha256:" + h.hexdigest()


def _image(image: str) -> ImageEvidence:
    from rsr.sandbox import engine

    info = engine.api().inspect_image(image)
    return ImageEvidence(id=info["Id"], repo_digests=list(info.get("RepoDigests") or []),
                         layers=list((info.get("RootFS") or {}).get("Layers") or []))


def _record(task: LoadedTask, result: Any, mode: str, store: BlobStore) -> str:
    from rsr import __version__ as rsr_version

    changes = result.evidence
    cfg = task.config.verifier
    files = getattr(result, "reward_files", None) or {}
    record = SampleEvidence(
        task_name=task.name, task_digest=task.digest, image=_image(changes.image),
        changes=ChangesEvidence(archive=store.put(changes.archive), archive_bytes=len(changes.archive),
                                deleted=list(changes.deleted), dropped=list(changes.dropped),
                                roots=list(changes.roots)),
        # The env as task.toml writes it: expanding ${VAR} here would copy host values into a
        # bundle that is meant to be published.
        inputs=VerifierInputs(tests=tests_digest(task), command=["/bin/bash", "-c", task.test_command()],
                              env=dict(cfg.env), user=cfg.user, workdir=task.workdir,
                              timeout_sec=cfg.timeout_sec, integrity=mode),
        outputs=VerifierOutputs(
            reward_files={name: (store.put(data) if data is not None else None) for name, data in files.items()},
            returncode=result.returncode, error=result.error, score=result.score_value(),
            integrity=result.integrity.model_dump(mode="json") if result.integrity else None),
        verifier=rsr_version)
    return store.put_model(record)


async def keep_evidence(task: LoadedTask, result: Any, mode: str, store: BlobStore) -> str | None:
    """Store the sample's bundle; its record's digest (None: the verifier captured no changes)."""
    if getattr(result, "evidence", None) is None:
        return None
    return await asyncio.to_thread(_record, task, result, mode, store)
