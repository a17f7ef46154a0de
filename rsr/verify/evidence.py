"""Evidence bundles: what each sample's verdict was computed from, content-addressed.

A bundle store is a folder beside the logs (`<log dir>/evidence/`):

    evidence/
      blobs/sha256/<hex>        every blob, named by the sha256 of its bytes
      manifests/<log>.manifest  each log's run manifest, JSON (also stored as a blob)

Per sample the verifier stores the kept-changes archive (the layer the tests ran on), the
test files archive, the reward files, and one `SampleEvidence` record (itself a blob) naming
them by digest with the task digest, the pristine image, the verifier's command and env, its
return code, score and integrity record. The score's metadata records the record's digest
(`evidence`), so the log pins every byte of its evidence. A `RunManifest` lists the record of
every sample of a log; its digest is a function of what the log records, and leaderboard
entries record it.

A one-byte edit of any blob changes its sha256 and is caught when the blob is read; a blob
renamed to its new hash no longer matches the digest the log (and the record) names.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rsr.errors import RsrError

__all__ = [
    "EVIDENCE_DIR",
    "MANIFESTS_DIR",
    "MANIFEST_SUFFIX",
    "SCORE_KEY",
    "EvidenceError",
    "MissingBlob",
    "BlobStore",
    "ChangesEvidence",
    "ImageEvidence",
    "ManifestSample",
    "RunManifest",
    "SampleEvidence",
    "VerifierInputs",
    "VerifierOutputs",
    "bundle_blobs",
    "copy_bundle",
    "manifest_path",
    "read_manifest",
    "record_of",
    "run_manifest",
    "write_manifest",
    "sha256_digest",
    "store_for_log",
]

EVIDENCE_DIR = "evidence"
RECORD_FORMAT = "rsr-evidence/1"
MANIFEST_FORMAT = "rsr-evidence-manifest/1"


class EvidenceError(RsrError):
    """A bundle is missing, unreadable, or does not match the digest that names it."""


class MissingBlob(EvidenceError):
    """A blob the log (or a record) names is not in the store."""


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(model: BaseModel) -> bytes:
    """The bytes a record's digest is computed over: sorted keys, no whitespace."""
    return json.dumps(model.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode()


class BlobStore:
    """A content-addressed folder of blobs: `put` returns the digest, `get` checks it."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        algo, _, hexdigest = digest.partition(":")
        if algo != "sha256" or len(hexdigest) != 64 or not all(c in "0123456789abcdef" for c in hexdigest):
            raise EvidenceError(f"{digest!r} is not a sha256 digest")
        return self.root / "blobs" / "sha256" / hexdigest

    def put(self, data: bytes) -> str:
        digest = sha256_digest(data)
        target = self.path(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written under a temporary name and renamed: a crash never leaves a truncated blob
        # under a digest it does not have.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o444)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def get(self, digest: str, what: str = "blob") -> bytes:
        path = self.path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError as e:
            raise MissingBlob(f"{what} {digest} is missing from the bundle store {self.root}") from e
        found = sha256_digest(data)
        if found != digest:
            raise EvidenceError(f"{what} {digest} in {self.root} was modified: its content hashes to {found}")
        return data

    def put_model(self, model: BaseModel) -> str:
        return self.put(canonical_json(model))

    def get_model(self, digest: str, model: type[Any], what: str) -> Any:
        data = self.get(digest, what)
        try:
            return model.model_validate_json(data)
        except ValueError as e:
            raise EvidenceError(f"{what} {digest} in {self.root} is not a valid {model.__name__}: {e}") from e


def store_for_log(log: str | Path, store: str | Path | None = None) -> BlobStore:
    """The store beside a log (`<log dir>/evidence`), or the one given."""
    if store is not None:
        return BlobStore(store)
    return BlobStore(Path(log).parent / EVIDENCE_DIR)


class ChangesEvidence(BaseModel):
    """The agent's kept filesystem changes: what the verifier applied to the pristine image."""

    model_config = ConfigDict(extra="forbid")

    archive: str = Field(description="digest of the tar of kept files (paths without the leading /)")
    archive_bytes: int
    changes: str = Field(description="digest of the rsr.verify.deliverables.Changes record (plan, kept, "
                         "deleted, added, directories, dropped, the agent container's configuration)")
    trust: str = Field(description="what reached the checker (deliverables, inferred, audited, harbor)")
    kept: int = 0
    deleted: int = 0
    dropped: int = 0


class ImageEvidence(BaseModel):
    """The pristine task image the agent's container was created from."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="the engine's image id (sha256 of its config)")
    repo_digests: list[str] = Field(default_factory=list, description="registry digests, when pushed")
    layers: list[str] = Field(default_factory=list, description="RootFS layer diff ids")


class VerifierInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tests: str = Field(description="digest of the test files archive installed at /tests")
    command: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None
    workdir: str | None = None
    timeout_sec: float
    integrity: str = Field(description="integrity mode the sample was verified in")


class VerifierOutputs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reward_files: dict[str, str | None] = Field(
        default_factory=dict, description="reward.txt / reward.json -> digest (None: not written)")
    returncode: int | None = None
    error: str | None = None
    score: dict[str, float]
    metrics: dict[str, float] = Field(default_factory=dict)
    milestones: dict[str, float] = Field(default_factory=dict)
    integrity: dict[str, Any] | None = None


class SampleEvidence(BaseModel):
    """One sample's record: every input and output of its verdict, by digest."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["rsr-evidence/1"] = RECORD_FORMAT
    sample_uuid: str | None = Field(None, description="the Inspect sample the verdict belongs to: a record "
                                    "moved under another sample no longer matches it")
    eval_id: str | None = Field(None, description="the eval the sample ran in")
    epoch: int | None = Field(None, description="the sample's epoch")
    transcript: str | None = Field(None, description="digest of the sample's transcript at scoring time "
                                   "(rsr.verify.binding.transcript_digest): messages, model calls, start time")
    task_name: str
    task_digest: str
    image: ImageEvidence
    changes: ChangesEvidence
    inputs: VerifierInputs
    outputs: VerifierOutputs
    verifier: str = Field(description="rsr version whose verifier produced the verdict")

    def named_blobs(self) -> list[tuple[str, str]]:
        """(what, digest) of every blob the record names. The tests are named by digest only: a
        bundle is published, the hidden tests are not."""
        files = [(f"reward file {name}", d) for name, d in sorted(self.outputs.reward_files.items()) if d]
        return [("kept-changes archive", self.changes.archive), ("changes record", self.changes.changes), *files]

    def blobs(self) -> list[str]:
        return [d for _, d in self.named_blobs()]


class ManifestSample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    epoch: int
    task_name: str
    record: str | None = Field(description="digest of the sample's SampleEvidence; None: no bundle")


class RunManifest(BaseModel):
    """One log's bundle: every sample's record digest."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["rsr-evidence-manifest/1"] = MANIFEST_FORMAT
    eval_id: str
    task: str
    samples: list[ManifestSample]

    @property
    def digest(self) -> str:
        return sha256_digest(canonical_json(self))

    @property
    def complete(self) -> bool:
        return bool(self.samples) and all(s.record for s in self.samples)


MANIFESTS_DIR = "manifests"
# Not `.json`: Inspect takes every .json file under a log folder for a log (eval_set's resume
# would try to read a manifest as one).
MANIFEST_SUFFIX = ".manifest"


def manifest_path(root: Path, log_path: str | Path) -> Path:
    """Where a log's manifest lives in a store: `manifests/<log file name>.manifest`."""
    return root / MANIFESTS_DIR / f"{Path(log_path).name}{MANIFEST_SUFFIX}"
SCORE_KEY = "evidence"
"""Score metadata key of a sample's bundle: `{"record": <digest of its SampleEvidence>}`."""


def record_of(score_metadata: dict[str, Any] | None) -> str | None:
    value = (score_metadata or {}).get(SCORE_KEY)
    if isinstance(value, dict) and isinstance(value.get("record"), str):
        return value["record"]
    return None


def run_manifest(log: Any, scorer: str = "verifier") -> RunManifest:
    """The manifest of an Inspect log (its samples' scores read): what the log records."""
    samples = []
    for s in sorted(log.samples or [], key=lambda s: (str(s.id), s.epoch)):
        score = (s.scores or {}).get(scorer)
        samples.append(ManifestSample(id=str(s.id), epoch=int(s.epoch),
                                      task_name=str((s.metadata or {}).get("task_name") or s.id),
                                      record=record_of(score.metadata if score else None)))
    return RunManifest(eval_id=log.eval.eval_id, task=log.eval.task, samples=samples)


def read_manifest(path: str | Path) -> RunManifest:
    from inspect_ai.log import read_eval_log

    return run_manifest(read_eval_log(str(path), exclude_fields={"events", "messages", "attachments", "store"}))


def write_manifest(log_path: str | Path, store: BlobStore | None = None,
                   manifest: RunManifest | None = None) -> tuple[RunManifest, Path]:
    """Store a log's manifest (as a blob and as `manifests/<log file>.manifest`) in its bundle store."""
    store = store or store_for_log(log_path)
    manifest = manifest or read_manifest(log_path)
    store.put_model(manifest)
    path = manifest_path(store.root, log_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest, path


def bundle_blobs(manifest: RunManifest, store: BlobStore) -> list[str]:
    """Every blob the manifest names, records included (a missing or edited one raises)."""
    out: list[str] = []
    for s in manifest.samples:
        if not s.record:
            continue
        record = store.get_model(s.record, SampleEvidence, f"evidence record of sample {s.id} epoch {s.epoch}")
        out.extend([s.record, *record.blobs()])
    return list(dict.fromkeys(out))


def copy_bundle(log_path: str | Path, dest: str | Path) -> tuple[RunManifest, Path]:
    """Copy a log's bundle (every blob its manifest names) into `dest/evidence`; the manifest and
    where its copy was written."""
    source = store_for_log(log_path)
    target = BlobStore(Path(dest) / EVIDENCE_DIR)
    manifest = read_manifest(log_path)
    for digest in bundle_blobs(manifest, source):
        target.put(source.get(digest))
    return write_manifest(log_path, target, manifest)
