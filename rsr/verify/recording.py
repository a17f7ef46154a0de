"""Write one sample's evidence bundle from a verifier result (the scorer calls this)."""

from __future__ import annotations

import asyncio
import hashlib
import json
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
from rsr.verify.snapshot import installs_executable

__all__ = ["CHANGES_EXCLUDE", "keep_evidence", "tests_digest"]

# A Changes record's host-side archive path means nothing once it is in a bundle.
CHANGES_EXCLUDE = {"archive_path"}


def tests_digest(task: LoadedTask) -> str:
    """The test files the verifier installs, by path, content and executable bit (no mtimes, so
    a fresh checkout of the same tests gives the same digest)."""
    h = hashlib.sha256()
    for container_path, host_path in sorted(task.test_files().items()):
        data = host_path.read_bytes()
        executable = installs_executable(host_path, container_path)
        h.update(f"{container_path}\0{hashlib.sha256(data).hexdigest()}\0{int(executable)}\n".encode())
    return "sha256:" + h.hexdigest()


def _image(image: str) -> ImageEvidence:
    from rsr.sandbox import engine

    info = engine.api().inspect_image(image)
    return ImageEvidence(id=info["Id"], repo_digests=list(info.get("RepoDigests") or []),
                         layers=list((info.get("RootFS") or {}).get("Layers") or []))


def _record(task: LoadedTask, result: Any, mode: str, store: BlobStore,
            reward_files: dict[str, bytes | None], sample_uuid: str | None, bound: dict[str, Any]) -> str:
    from rsr import __version__ as rsr_version

    changes = result.evidence
    cfg = task.config.verifier
    described = json.dumps(changes.model_dump(mode="json", exclude=CHANGES_EXCLUDE), sort_keys=True,
                           separators=(",", ":")).encode()
    record = SampleEvidence(
        sample_uuid=sample_uuid, **bound, task_name=task.name, task_digest=task.digest, image=_image(changes.image),
        changes=ChangesEvidence(archive=store.put(changes.read_archive()), archive_bytes=changes.archive_bytes,
                                changes=store.put(described), trust=changes.plan.trust, kept=len(changes.kept),
                                deleted=len(changes.deleted), dropped=len(changes.dropped)),
        # The env as task.toml writes it: expanding ${VAR} here would copy host values into a
        # bundle that is meant to be published.
        inputs=VerifierInputs(tests=tests_digest(task), command=["/bin/bash", "-c", task.test_command()],
                              env=dict(cfg.env), user=cfg.user, workdir=task.workdir,
                              timeout_sec=cfg.timeout_sec, integrity=mode),
        outputs=VerifierOutputs(
            reward_files={name: (store.put(data) if data is not None else None) for name, data in reward_files.items()},
            returncode=result.returncode, error=result.error, score=result.score_value(),
            metrics=result.metrics, milestones=result.milestones,
            integrity=result.integrity.model_dump(mode="json") if result.integrity else None),
        verifier=rsr_version)
    return store.put_model(record)


async def keep_evidence(task: LoadedTask, result: Any, mode: str, store: BlobStore,
                        reward_files: dict[str, bytes | None] | None = None,
                        sample_uuid: str | None = None, *, eval_id: str | None = None, epoch: int | None = None,
                        transcript: str | None = None) -> str | None:
    """Store the sample's bundle and discard the verifier's archive file; the record's digest
    (None: the verifier captured no changes, e.g. a live or separate verifier). `eval_id`,
    `epoch` and `transcript` (its digest) bind the record to the execution (rsr.verify.binding)."""
    changes = getattr(result, "evidence", None)
    if changes is None:
        return None
    try:
        return await asyncio.to_thread(_record, task, result, mode, store, reward_files or {}, sample_uuid,
                                     {"eval_id": eval_id, "epoch": epoch, "transcript": transcript})
    finally:
        changes.discard()
