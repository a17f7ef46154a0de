"""Samples bound to their executions: one run's verdict cannot stand in for another's.

Each sample's evidence record binds the eval it ran in, its task, its epoch, its sample uuid and
the digest of its transcript (messages, model calls and the moment the sample started), beside
the digests of its evidence. A log is refused wherever results are accepted (regrade,
leaderboard validation) when a sample's record names another eval, epoch, uuid, task or
transcript than the sample's own, or when two samples share a uuid, a record, a transcript or a
non-empty kept-changes archive: that is one execution counted twice (the passing epoch copied
over the failing ones).

What this cannot stop: a submitter who rewrites a copied sample's transcript (a new start time,
new message ids) and every digest after it has forged a run; only a signature by the machine
that ran it would tell.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rsr.verify.evidence import BlobStore, EvidenceError, SampleEvidence, record_of, store_for_log

__all__ = ["binding_problems", "transcript_digest", "unbound_samples"]

SCORER = "verifier"


def transcript_digest(messages: list[Any], events: list[Any]) -> str:
    """sha256 over the sample's messages, its model calls (their outputs and times) and the time
    its sample started: equal for a copy, different for every execution (a model that answers
    the same twice still answers at another time)."""
    h = hashlib.sha256()

    def feed(value: Any) -> None:
        h.update(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode())
        h.update(b"\n")

    for m in messages:
        feed(m.model_dump(mode="json", exclude_none=True))
    for e in events:
        kind = getattr(e, "event", None)
        if kind == "sample_init":
            feed({"sample_init": e.timestamp.isoformat()})
        elif kind == "model" and getattr(e, "output", None) is not None:
            feed({"model": e.timestamp.isoformat(), "output": e.output.model_dump(mode="json", exclude_none=True)})
    return "sha256:" + h.hexdigest()


def unbound_samples(path: str | Path, log: Any, store: BlobStore | None = None) -> dict[tuple[str, int], str]:
    """(sample id, epoch) -> why, for every sample of the log at `path` whose evidence record is
    not bound to its own execution (see the module docstring); samples without a record are
    left to the callers' own rule about missing bundles."""
    from inspect_ai.log import read_eval_log_sample

    store = store or store_for_log(path)
    eval_id = log.eval.eval_id
    found: dict[tuple[str, int], str] = {}
    seen: dict[str, dict[str, tuple[str, int]]] = {"uuid": {}, "record": {}, "transcript": {}, "archive": {}}

    def once(kind: str, value: str | None, key: tuple[str, int]) -> None:
        if value is None:
            return
        other = seen[kind].setdefault(value, key)
        if other != key:
            for a, b in ((key, other), (other, key)):
                found.setdefault(a, f"shares its {kind} {value[:24]} with sample {b[0]} epoch {b[1]} (one execution "
                                    "counted twice)")

    for s in sorted(log.samples or [], key=lambda s: (str(s.id), s.epoch)):
        key = (str(s.id), int(s.epoch))
        score = (s.scores or {}).get(SCORER)
        digest = record_of(score.metadata if score is not None else None)
        once("uuid", s.uuid, key)
        if digest is None:
            continue
        try:
            record = store.get_model(digest, SampleEvidence, "evidence record")
        except EvidenceError:
            continue  # a missing or edited record is the callers' finding (bundle-missing, bundle-modified)
        full = read_eval_log_sample(str(path), id=s.id, epoch=s.epoch, resolve_attachments=True)
        transcript = transcript_digest(full.messages or [], full.events or [])
        expected = {"eval": (record.eval_id, eval_id), "epoch": (record.epoch, key[1]),
                    "sample uuid": (record.sample_uuid, s.uuid),
                    "task digest": (record.task_digest, (s.metadata or {}).get("task_digest")),
                    "transcript": (record.transcript, transcript)}
        wrong = [f"{what} {have} (the sample's is {want})" for what, (have, want) in expected.items() if have != want]
        if wrong:
            found.setdefault(key, "its evidence record names another execution: " + "; ".join(wrong))
        once("record", digest, key)
        once("transcript", transcript, key)
        if record.changes.kept or record.changes.deleted:
            once("archive", record.changes.archive, key)
    return found


def binding_problems(path: str | Path, log: Any, store: BlobStore | None = None) -> list[str]:
    """`unbound_samples` as problem lines (empty: every sample is its own execution)."""
    return [f"sample {sid} epoch {epoch}: {why}"
            for (sid, epoch), why in sorted(unbound_samples(path, log, store).items())]
