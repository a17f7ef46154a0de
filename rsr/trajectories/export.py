"""`rsr trajectories export`: Inspect logs -> ATIF files or a messages JSONL."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from inspect_ai.log import EvalLog, EvalSample, read_eval_log, read_eval_log_samples

from rsr.errors import RsrError
from rsr.harness.terminus2 import STORE_RESULT, STORE_SETTINGS
from rsr.harness.tokens import STORE_TOKENS
from rsr.trajectories.atif import to_atif
from rsr.trajectories.messages import public_messages
from rsr.trajectories.redact import environment_secrets, redact

ExportFormat = Literal["atif", "messages"]
Outcome = Literal["all", "passed", "failed"]
View = Literal["public", "terminus2", "as-run"]
"""messages rows: `public` strips every harness control message (the legacy form);
`terminus2` is what Terminus 2 shows (StateM/RSRT control removed, its own confirmation,
parse feedback and warnings kept), one row per model context; `as-run` is each context as the
harness's model saw it, control included."""


@dataclass
class ExportSummary:
    samples: int = 0
    written: int = 0
    skipped_outcome: int = 0
    skipped_not_harness: int = 0
    files: list[Path] | None = None


def sample_passed(sample: EvalSample) -> bool | None:
    if not sample.scores:
        return None
    value = next(iter(sample.scores.values())).value
    if isinstance(value, dict):
        return float(value.get("passed", value.get("reward", 0)) or 0) >= 1.0
    try:
        return float(value) >= 1.0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def messages_row(sample: EvalSample, log: EvalLog, log_path: str,
                 keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """One training row (the `rsr.training.data.TrajectoryRow` schema plus provenance)."""
    public = public_messages(sample, keep=keep)
    settings = sample.store.get(STORE_SETTINGS) or {}
    result = sample.store.get(STORE_RESULT) or {}
    score = next(iter(sample.scores.values())).value if sample.scores else None
    reward = score.get("reward") if isinstance(score, dict) else None
    usage = [((m.metadata or {}).get("rsr") or {}).get("usage", {}) for m in sample.messages]
    metadata = sample.metadata or {}
    # Per-call token ids and logprobs, when the run recorded them (record_tokens): RL and
    # token-exact training read these instead of re-tokenising the messages.
    tokens = {"token_calls": sample.store[STORE_TOKENS]} if sample.store.get(STORE_TOKENS) else {}
    return {
        "messages": public.messages,
        "task": metadata.get("task_name", str(sample.id)),
        "suite": metadata.get("suite"),
        "source_harness": settings.get("harness"),
        "source_trajectory": f"{log_path}#{sample.id}/{sample.epoch}",
        "reward": reward,
        "passed": sample_passed(sample),
        "turns": result.get("turns"),
        "tokens": sum(u.get("total_tokens", 0) for u in usage),
        "model": log.eval.model,
        "epoch": sample.epoch,
        "task_digest": metadata.get("task_digest"),
        "prompt_version": settings.get("prompt_version"),
        # The words the model read: training renders with the same pack.
        "prompt_pack": settings.get("prompt_pack"),
        "prompt_pack_sha256": settings.get("prompt_pack_sha256"),
        "end_reason": result.get("end_reason"),
        "removed": [r.model_dump() for r in public.removed],
        **tokens,
    }


def segment_rows(sample: EvalSample, log: EvalLog, log_path: str,
                 view: View) -> list[dict[str, Any]]:
    """One training row per model context of `sample` (see `View`)."""
    from rsr.trajectories.model_view import model_view

    base = messages_row(sample, log, log_path)
    mv = model_view(sample, strip_source_control=view == "terminus2")
    removed = [r.model_dump() for r in mv.removed]
    return [{**base, "messages": seg.messages, "segment": seg.index,
             "segments": len(mv.segments), "handoff": seg.handoff, "removed": removed}
            for seg in mv.segments]


def _samples(path: Path) -> Iterator[EvalSample]:
    yield from read_eval_log_samples(str(path), all_samples_required=False)


EVAL_SET_RECORDS = ("eval-set.json", "logs.json")


def expand(paths: list[Path]) -> list[Path]:
    """The log files an export reads, each checked readable (one line naming a bad one)."""
    from rsr.report.logs import check_headers

    found = _expand(paths)
    if not found:
        raise RsrError(f"no .eval or .json logs in {', '.join(map(str, paths))}")
    check_headers(found)
    return found


def _expand(paths: list[Path]) -> list[Path]:
    """Log files, with directories replaced by the .eval/.json logs directly inside them."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            # eval_set's own records (eval-set.json, logs.json) sit beside the logs; not logs.
            found += sorted(p for p in path.iterdir() if p.suffix in (".eval", ".json")
                            and p.name not in EVAL_SET_RECORDS)
        elif path.is_file():
            found.append(path)
        else:
            raise RsrError(f"{path}: log file not found (pass .eval/.json logs or their folder)")
    return found


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def export_logs(logs: list[Path], fmt: ExportFormat, out: Path, outcome: Outcome = "all",
                keep: tuple[str, ...] = (), view: View = "public") -> ExportSummary:
    summary = ExportSummary(files=[])
    secrets = environment_secrets()
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for path in _expand(logs):
        header = read_eval_log(str(path), header_only=True)
        for sample in _samples(path):
            summary.samples += 1
            if not sample.store.get(STORE_SETTINGS):
                summary.skipped_not_harness += 1
                continue
            ok = sample_passed(sample)
            if (outcome == "passed" and ok is not True) or (outcome == "failed" and ok is True):
                summary.skipped_outcome += 1
                continue
            if fmt == "atif":
                data = redact(to_atif(sample, header).model_dump(mode="json",
                                                                 exclude_none=True), secrets)
                name = f"{_safe(str(sample.id))}.epoch{sample.epoch}.{path.stem}.json"
                target = out / name
                target.write_text(json.dumps(data, indent=2) + "\n")
                summary.files.append(target)  # type: ignore[union-attr]
            elif view == "public":
                rows.append(redact(messages_row(sample, header, str(path), keep), secrets))
            else:
                rows += [redact(r, secrets) for r in segment_rows(sample, header, str(path),
                                                                   view)]
            summary.written += 1
    if fmt == "messages":
        target = out / "messages.jsonl"
        with target.open("w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        summary.files.append(target)  # type: ignore[union-attr]
    return summary
