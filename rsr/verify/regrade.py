"""Regrade: re-run the verifier on a log's evidence bundles, with no model and no agent.

For every sample, `regrade_log` reads the sample's evidence record (its digest is in the
score's metadata), checks that the task on disk is the one the log ran (task digest), that the
pristine image is the one the agent started from (image id), and that every blob still hashes
to its name, then applies the kept changes to a fresh container of the pristine image and runs
the task's tests in it (`rsr.verify.verifier.verify_changes`, the verifier every live run
uses). A sample is *reproduced* when the fresh verdict equals the logged score.

What a regrade proves: the logged scores follow from the recorded final files under this
verifier and these tests. What it does not prove: that the agent (or model) named in the log
produced those files — a bundle is evidence of the end state, not of the trajectory. Regrading
an old run with today's verifier is how a verifier fix reaches published results.
"""

from __future__ import annotations

import asyncio
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rsr.errors import RsrError
from rsr.tasks.load import LoadedTask, load_task
from rsr.verify.binding import unbound_samples
from rsr.verify.evidence import (
    BlobStore,
    EvidenceError,
    MissingBlob,
    SampleEvidence,
    record_of,
    run_manifest,
    store_for_log,
    write_manifest,
)

__all__ = ["ModeMismatch", "RegradeReport", "SampleRegrade", "regrade_log", "regrade_mode", "regrade_record"]

SCORER = "verifier"
TOL = 1e-9
Status = Literal["reproduced", "differs", "no-bundle", "bundle-missing", "bundle-modified", "task-changed",
                 "image-changed", "unbound",
                 "unsupported", "error"]
Mode = Literal["strict", "warn"]
MODES: tuple[Mode, ...] = ("strict", "warn")


class ModeMismatch(EvidenceError):
    """A record (or the log's score) naming an integrity mode the task and the regrader do not allow."""


def regrade_mode(task: LoadedTask, record_mode: str, *, logged_mode: str | None = None,
                 required: Mode | None = None) -> Mode:
    """The integrity mode a regrade judges under: the one place it is decided (invariant 3).

    The floor comes from the task (strict when it declares its deliverables) and from whoever
    regrades (`required`: a board requiring strict, `rsr regrade --integrity strict`), never from
    the bundle. The record must name a mode at or above the floor, and the same mode as the log's
    score claims (what a board publishes): otherwise ModeMismatch, a `bundle-modified` sample. A
    record's `warn` would select the carry-everything plan, so it can never lower the floor; a
    record naming strict above a warn floor is regraded strict, the claim the log publishes,
    which only makes the regrade harder to pass."""
    if record_mode not in MODES:
        raise ModeMismatch(f"the record names integrity mode {record_mode!r}, not one of {', '.join(MODES)}")
    if logged_mode is not None and logged_mode != record_mode:
        raise ModeMismatch(f"the log's score says the sample was verified in mode {logged_mode!r}, its evidence "
                           f"record {record_mode!r}")
    declared = task.config.verifier.allow_changes is not None
    if record_mode != "strict" and (declared or required == "strict"):
        why = "the task declares its deliverables" if declared else "the regrade requires strict"
        raise ModeMismatch(f"the record says the sample was verified in mode {record_mode!r}, but {why}: a "
                           "regrade judges under strict whatever a submission names")
    return "strict" if record_mode == "strict" else "warn"


class SampleRegrade(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    epoch: int
    task_name: str
    status: Status
    reason: str = ""
    logged: dict[str, float] | None = None
    regraded: dict[str, float] | None = None
    seconds: float | None = None

    @property
    def where(self) -> str:
        return f"sample {self.id} epoch {self.epoch}"


class RegradeReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    log: str
    manifest: str | None = Field(None, description="digest of the log's run manifest")
    verifier: str = Field(description="rsr version of the verifier that regraded")
    samples: list[SampleRegrade]

    @property
    def ok(self) -> bool:
        return bool(self.samples) and all(s.status == "reproduced" for s in self.samples)

    @property
    def reproduced(self) -> int:
        return sum(s.status == "reproduced" for s in self.samples)

    def problems(self) -> list[str]:
        return [f"{s.where} ({s.task_name}): {s.status}: {s.reason}" for s in self.samples
                if s.status != "reproduced"]


def _close(a: dict[str, float] | None, b: dict[str, float] | None) -> bool:
    if a is None or b is None or a.keys() != b.keys():
        return False
    return all(math.isclose(float(a[k]), float(b[k]), abs_tol=TOL) for k in a)


def recorded_changes(task: LoadedTask, record: SampleEvidence, store: BlobStore, workdir: Path, mode: Mode,
                     image: tuple[str, dict[str, Any]] | None = None) -> Any:
    """The verifier's Changes rebuilt for a regrade: the bundle's archive members and deletions,
    judged under the task's own plan against its pristine image (rsr.verify.rebuild); nothing
    else of the bundle's changes record (its plan, lists, Env, working directory, limits) is used."""
    from rsr.verify.rebuild import ForgedArchive, rebuild_changes

    archive = store.get(record.changes.archive, "kept-changes archive")
    try:
        described = json.loads(store.get(record.changes.changes, "changes record"))
    except ValueError as e:
        raise EvidenceError(f"the changes record {record.changes.changes} is not JSON: {e}") from e
    deleted = described.get("deleted") if isinstance(described, dict) else None
    if not isinstance(deleted, list):
        raise ForgedArchive(f"the changes record {record.changes.changes} has no list of deletions")
    return rebuild_changes(task, archive, deleted, mode, workdir, image)


async def regrade_record(task: LoadedTask, record: SampleEvidence, store: BlobStore,
                         image: tuple[str, dict[str, Any]] | None = None, *, logged_mode: str | None = None,
                         required: Mode | None = None) -> Any:
    """The verifier's fresh verdict (a VerifierResult) on a recorded sample: its kept changes,
    judged under the task's plan, on a fresh container of the task's pristine image configured
    from the task, the task's tests, in the mode `regrade_mode` allows (ModeMismatch otherwise)."""
    from rsr.verify.rebuild import task_image
    from rsr.verify.verifier import verify_changes

    if image is None:
        image = await asyncio.to_thread(task_image, task)
    if image[1]["Id"] != record.image.id:
        raise EvidenceError(f"the record names image {record.image.id}, but the task's image {image[0]} is "
                            f"{image[1]['Id']}")
    mode = regrade_mode(task, record.inputs.integrity, logged_mode=logged_mode, required=required)
    with tempfile.TemporaryDirectory(prefix="rsr-regrade-") as tmp:
        changes = await asyncio.to_thread(recorded_changes, task, record, store, Path(tmp), mode, image)
        return await verify_changes(task, changes, integrity=mode)


def logged_mode_of(score_metadata: dict[str, Any] | None) -> str | None:
    """The integrity mode a log's score claims (what a board counts and publishes)."""
    record = (score_metadata or {}).get("integrity")
    mode = record.get("mode") if isinstance(record, dict) else None
    return str(mode) if mode is not None else None


def _load_task(meta: dict[str, Any], name: str, tasks_root: Path | None) -> LoadedTask:
    where = (tasks_root / name) if tasks_root is not None else Path(str(meta.get("task_dir") or ""))
    if not str(where) or not where.is_dir():
        raise RsrError(f"task {name!r} not found at {where} (pass --tasks DIR: the suite folder)")
    return load_task(where)


async def _regrade_sample(sample: Any, store: BlobStore, tasks_root: Path | None,
                          required: Mode | None) -> SampleRegrade:
    meta = sample.metadata or {}
    score = (sample.scores or {}).get(SCORER)
    name = str(meta.get("task_name") or sample.id)
    out = SampleRegrade(id=str(sample.id), epoch=int(sample.epoch), task_name=name, status="error",
                        logged=({k: float(v) for k, v in score.value.items()}
                                if score is not None and isinstance(score.value, dict) else None))
    digest = record_of(score.metadata if score is not None else None)
    if digest is None:
        out.status, out.reason = "no-bundle", "the sample's score names no evidence record"
        return out
    try:
        record = store.get_model(digest, SampleEvidence, "evidence record")
        for what, blob in record.named_blobs():
            store.get(blob, what)
    except MissingBlob as e:
        out.status, out.reason = "bundle-missing", str(e)
        return out
    except EvidenceError as e:
        out.status, out.reason = "bundle-modified", str(e)
        return out
    if record.sample_uuid is not None and record.sample_uuid != sample.uuid:
        out.status, out.reason = "bundle-modified", (f"the record belongs to sample uuid {record.sample_uuid}, not "
                                                     f"this sample's {sample.uuid}")
        return out
    logged_digest = meta.get("task_digest")
    if record.task_digest != logged_digest:
        out.status, out.reason = "bundle-modified", (f"the record's task digest {record.task_digest} is not the "
                                                     f"sample's {logged_digest}")
        return out
    if out.logged is not None and not _close(out.logged, record.outputs.score):
        out.status, out.reason = "bundle-modified", (f"the record's score {record.outputs.score} is not the "
                                                     f"logged {out.logged}")
        return out
    try:
        task = _load_task(meta, name, tasks_root)
    except Exception as e:  # noqa: BLE001 - a task that no longer loads is that sample's finding
        out.status, out.reason = "task-changed", f"{e}"
        return out
    if task.digest != record.task_digest:
        out.status, out.reason = "task-changed", (f"task {name} at {task.paths.task_dir} has digest {task.digest}; "
                                                  f"the log ran {record.task_digest}")
        return out
    if task.config.verifier.isolation == "live":
        out.status, out.reason = "unsupported", ("the task's tests check processes the agent left running, which "
                                                 "a bundle of files cannot bring back")
        return out
    from rsr.verify.rebuild import task_image

    try:
        image = await asyncio.to_thread(task_image, task)
    except RsrError as e:
        out.status, out.reason = "image-changed", str(e)
        return out
    if image[1]["Id"] != record.image.id:
        out.status, out.reason = "image-changed", (f"the task's image {image[0]} is {image[1]['Id']}; the log "
                                                   f"ran {record.image.id} (rebuild or pull the task's image)")
        return out
    started = time.monotonic()
    try:
        result = await regrade_record(task, record, store, image, required=required,
                                      logged_mode=logged_mode_of(score.metadata if score is not None else None))
    except EvidenceError as e:
        out.status, out.reason = "bundle-modified", str(e)
        return out
    except RsrError as e:  # a strict regrade of a task without deliverables, declared or inferred here
        out.status, out.reason = "unsupported", str(e)
        return out
    out.seconds = time.monotonic() - started
    out.regraded = result.score_value()
    if _close(out.logged, out.regraded):
        out.status = "reproduced"
    else:
        out.status = "differs"
        out.reason = (f"logged {out.logged}, regraded {out.regraded}"
                      + (f" ({result.error})" if result.error else ""))
    return out


def regrade_log(path: str | Path, *, store: str | Path | None = None, tasks_root: str | Path | None = None,
                on_sample: Any = None, jobs: int = 1, log: Any = None, required: Mode | None = None) -> RegradeReport:
    """Regrade every sample of a log from its bundles; `tasks_root`: the suite folder to load
    tasks from instead of the paths the log recorded; `on_sample(SampleRegrade)` after each;
    `jobs` samples at a time; `log`: the log at `path`, when the caller has read it already;
    `required`: the integrity mode the regrader requires (a board's; see `regrade_mode`)."""
    from inspect_ai.log import read_eval_log

    from rsr import __version__ as rsr_version

    path = Path(path)
    if log is None:
        try:
            log = read_eval_log(str(path), exclude_fields={"events", "messages", "attachments", "store"})
        except FileNotFoundError as e:
            raise RsrError(f"{path}: log file not found") from e
    blobs = store_for_log(path, store)
    root = Path(tasks_root) if tasks_root is not None else None
    manifest = run_manifest(log)
    if blobs.root.is_dir():
        try:
            write_manifest(path, blobs, manifest)
        except OSError:  # a read-only copy (a published board) regrades all the same
            pass

    limit = asyncio.Semaphore(max(1, jobs))
    unbound = unbound_samples(path, log, blobs)

    async def one(s: Any) -> SampleRegrade:
        async with limit:
            if (str(s.id), int(s.epoch)) in unbound:
                result = SampleRegrade(id=str(s.id), epoch=int(s.epoch), status="unbound",
                                       task_name=str((s.metadata or {}).get("task_name") or s.id),
                                       reason=unbound[(str(s.id), int(s.epoch))])
            else:
                result = await _regrade_sample(s, blobs, root, required)
        if on_sample is not None:
            on_sample(result)
        return result

    async def run_all() -> list[SampleRegrade]:
        return list(await asyncio.gather(*(one(s) for s in sorted(log.samples or [],
                                                                    key=lambda s: (str(s.id), s.epoch)))))

    samples = asyncio.run(run_all())
    return RegradeReport(log=str(path), manifest=manifest.digest if manifest.complete else None, verifier=rsr_version,
                         samples=samples)
