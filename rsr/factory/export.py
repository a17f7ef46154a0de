"""Stage 7, export: the kept rewrites as a Hugging Face dataset, plus the baselines.

- `<out>/dataset/` (`save_to_disk`), `<out>/dataset.jsonl`, `<out>/dataset.parquet`: RSR rows;
- `<out>/baselines/direct-sft[.jsonl]`: every discovery success as its harness's model saw it,
  control included (the paper's "Direct SFT");
- `<out>/baselines/direct-sft-stripped[.jsonl]`: the same successes in their Terminus 2 view
  (StateM/RSRT control removed, Terminus 2's own messages kept);
- `<out>/baselines/terminus2-direct[.jsonl]`: the Terminus 2 discovery successes;
- `<out>/DATASET_CARD.md` (also `dataset/README.md`): funnel, dedupe, segments, refusals.

A row is one model context (`segment`): `messages` are exactly what the model was sent in its
last call of that context plus its reply, so a trajectory summarised at inference becomes
several rows, each after the first opening with its hand-off. The contamination guard refuses
rows whose task belongs to an evaluation suite, shares a name, non-boilerplate files or its
instruction (copied or paraphrased) with an evaluation task, unless
`export.allow_contamination` is set (then rows are kept and marked); suites it cannot check
here are listed in the card.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsr.errors import RsrError
from rsr.factory.config import FactoryConfig
from rsr.factory.critique import shingles
from rsr.factory.dedupe import minhash
from rsr.factory.ledger import FactoryPaths
from rsr.factory.records import Decision, Execution, Runbook, Source, content_hash, read_rows
from rsr.suites.registry import resolve_suite_path
from rsr.tasks.load import LoadedTask, iter_files, load_dataset, load_task
from rsr.trajectories.model_view import Segment
from rsr.trajectories.redact import environment_secrets, redact

MIN_FILE_BYTES = 64
INSTRUCTION_SHINGLE = 2


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _task_files(task: LoadedTask) -> dict[str, str]:
    """sha256 -> relative path of the task's test and environment files (big enough to matter)."""
    out: dict[str, str] = {}
    for folder in (task.paths.tests_dir, task.paths.environment_dir):
        if folder is None or not folder.is_dir():
            continue
        for rel, path in iter_files(folder):
            if path.stat().st_size >= MIN_FILE_BYTES:
                out[_sha(path)] = f"{folder.name}/{rel}"
    return out


def _dataset_boilerplate(task_dir: Path) -> set[str]:
    """Hashes of files that several tasks of one dataset share (a generic test.sh, a shared
    Dockerfile): sharing them says nothing about sharing a task."""
    seen: dict[str, set[str]] = {}
    root = task_dir.parent
    for sibling in sorted(p for p in root.iterdir() if p.is_dir()):
        for folder in (sibling / "tests", sibling / "environment"):
            if not folder.is_dir():
                continue
            for _rel, path in iter_files(folder):
                if path.stat().st_size >= MIN_FILE_BYTES:
                    seen.setdefault(_sha(path), set()).add(sibling.name)
    return {h for h, tasks in seen.items() if len(tasks) >= 2}


def _instruction_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    n = INSTRUCTION_SHINGLE
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


@dataclass
class EvalIndex:
    """The evaluation tasks the training data must stay away from."""

    suites: set[str]
    tasks: list[tuple[str, LoadedTask]] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    """Evaluation suites that are not on this machine: only their names could be checked."""
    checked: dict[str, int] = field(default_factory=dict)
    """Evaluation sources whose tasks were compared: label -> number of tasks."""
    threshold: float = 0.5
    similarity: float = 0.5
    _sketches: dict[int, Any] = field(default_factory=dict)
    _boilerplate: dict[Path, set[str]] = field(default_factory=dict)
    _eval_boilerplate: set[str] | None = None

    @classmethod
    def build(cls, cfg: FactoryConfig) -> EvalIndex:
        index = cls(suites=set(cfg.export.eval_suites), threshold=cfg.export.instruction_overlap,
                    similarity=cfg.export.instruction_similarity)
        roots: list[tuple[str, Path]] = []
        for suite in cfg.export.eval_suites:
            try:
                roots.append((suite, resolve_suite_path(suite)))
            except RsrError as e:
                index.unavailable[suite] = str(e).splitlines()[0]
        roots += [(f"path:{p}", p) for p in cfg.export.eval_paths]
        for label, root in roots:
            loaded = load_dataset(root)
            index.tasks += [(label, t) for t in loaded.tasks]
            index.checked[label] = len(loaded.tasks)
        return index

    def _sketch(self, i: int, text: str) -> Any:
        if i not in self._sketches:
            self._sketches[i] = minhash(_instruction_words(text))
        return self._sketches[i]

    def boilerplate(self, task: LoadedTask) -> set[str]:
        if self._eval_boilerplate is None:
            counts: dict[str, set[str]] = {}
            for _, other in self.tasks:
                for h in _task_files(other):
                    counts.setdefault(h, set()).add(str(other.paths.task_dir))
            self._eval_boilerplate = {h for h, t in counts.items() if len(t) >= 2}
        parent = task.paths.task_dir.parent
        if parent not in self._boilerplate:
            self._boilerplate[parent] = _dataset_boilerplate(task.paths.task_dir)
        return self._boilerplate[parent] | self._eval_boilerplate

    def check(self, task: LoadedTask, suite: str) -> list[str]:
        reasons: list[str] = []
        if suite in self.suites:
            reasons.append(f"task {task.name} is from evaluation suite {suite!r}")
        own = shingles(task.instruction)
        own_sketch = minhash(_instruction_words(task.instruction))
        boilerplate = self.boilerplate(task)
        files = {h: rel for h, rel in _task_files(task).items() if h not in boilerplate}
        for n, (label, other) in enumerate(self.tasks):
            where = f"evaluation task {other.name} ({label})"
            if other.paths.task_dir.resolve() == task.paths.task_dir.resolve():
                reasons.append(f"task {task.name} is {where}")
                continue
            if other.name == task.name:
                reasons.append(f"task {task.name} has the name of {where}")
            theirs = shingles(other.instruction)
            share = len(own & theirs) / min(len(own), len(theirs)) if own and theirs else 0.0
            if share >= self.threshold:
                reasons.append(f"instruction of {task.name} overlaps {where}: "
                               f"{share:.0%} of 8-word shingles")
            else:  # reworded copies share few long runs but most word pairs
                sim = float(own_sketch.jaccard(self._sketch(n, other.instruction)))
                if sim >= self.similarity:
                    reasons.append(f"instruction of {task.name} is a near-duplicate of {where}"
                                   f" (MinHash Jaccard {sim:.2f} of word pairs)")
            common = set(files) & set(_task_files(other))
            if common:
                reasons.append(f"{task.name} shares file {files[sorted(common)[0]]} with {where}")
        return reasons


@dataclass
class ExportResult:
    rows: int = 0
    trajectories: int = 0
    refused: dict[str, list[str]] = field(default_factory=dict)
    refused_rows: dict[str, int] = field(default_factory=dict)
    """Rows the guard kept out, per kind (rsr, and each baseline); none with
    allow_contamination."""
    baselines: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    unchecked_suites: dict[str, str] = field(default_factory=dict)
    checked_eval: dict[str, int] = field(default_factory=dict)
    summarised: int = 0


def _segment_rows(segments: list[Segment], base: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"messages": seg.messages, **base, "segment": seg.index, "segments": len(segments),
             "handoff": seg.handoff, "content_hash": content_hash(seg.messages)}
            for seg in segments]


def log_model(log: str) -> str:
    """The model a stage log records (what produced its samples), not what the config says now."""
    from inspect_ai.log import read_eval_log

    return read_eval_log(log, header_only=True).eval.model


def _rsr_rows(paths: FactoryPaths) -> list[dict[str, Any]]:
    sources = {s.id: s for s in read_rows(paths.stage_file("sources"), Source)}
    executions = {e.id: e for e in read_rows(paths.stage_file("executions"), Execution)}
    runbooks = {r.id: r for r in read_rows(paths.stage_file("runbooks"), Runbook)}
    models = functools.cache(log_model)
    rows = []
    for d in read_rows(paths.stage_file("decisions"), Decision):
        if not d.kept:
            continue
        e = executions[d.execution_id]
        source = sources[e.source_id]
        runbook = runbooks[e.runbook_id]
        segments = e.segments or [Segment(index=0, handoff=False, messages=e.messages)]
        rows += _segment_rows(segments, {
            "kind": "rsr", "task": e.task, "suite": e.suite,
            "source_harness": source.harness, "source_trajectory": f"{source.log}#{source.id}",
            "runbook_id": e.runbook_id, "execution_id": e.id, "reward": e.reward,
            "turns": e.turns, "tokens": e.tokens, "trajectory_hash": d.content_hash,
            "runbook_rounds": len(runbook.attempts), "model": models(e.log), "log": e.log,
            "task_dir": source.task_dir})
    return rows


def _source_rows(paths: FactoryPaths, kind: str) -> list[dict[str, Any]]:
    """Baseline rows: `direct-sft` (as the source harness's model saw it, control included),
    `direct-sft-stripped` (its Terminus 2 view), `terminus2-direct` (Terminus 2 sources)."""
    rows = []
    models = functools.cache(log_model)
    for s in read_rows(paths.stage_file("sources"), Source):
        if kind == "terminus2-direct" and s.harness != "terminus2":
            continue
        segments = s.raw_segments if kind == "direct-sft" else s.segments
        segments = segments or [Segment(index=0, handoff=False, messages=s.messages)]
        rows += _segment_rows(segments, {
            "kind": kind, "task": s.task, "suite": s.suite, "source_harness": s.harness,
            "source_trajectory": f"{s.log}#{s.id}", "runbook_id": None, "execution_id": None,
            "reward": s.reward, "turns": s.turns, "tokens": s.tokens,
            "trajectory_hash": content_hash([m for g in segments for m in g.messages]),
            "runbook_rounds": 0, "model": models(s.log), "log": s.log, "task_dir": s.task_dir})
    return rows


def guard(rows: list[dict[str, Any]], index: EvalIndex, allow: bool
          ) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Rows that may be exported, and the refused tasks with their reasons."""
    verdicts: dict[str, list[str]] = {}
    kept = []
    for row in rows:
        if row["task_dir"] not in verdicts:
            verdicts[row["task_dir"]] = index.check(load_task(row["task_dir"]), row["suite"])
        reasons = verdicts[row["task_dir"]]
        if reasons and not allow:
            continue
        kept.append({**row, "contamination": "; ".join(reasons) or None})
    refused = {Path(k).name: v for k, v in verdicts.items() if v}
    return kept, refused


def redact_rows(rows: list[dict[str, Any]], secrets: list[str] | None = None) -> list[dict[str, Any]]:
    """API keys and secret-named environment values never reach a dataset; a row whose messages
    changed gets its content hash recomputed so provenance still matches the text."""
    secrets = environment_secrets() if secrets is None else secrets
    out = []
    for row in rows:
        clean = redact(row, secrets)
        if clean.get("messages") != row.get("messages"):
            clean["content_hash"] = content_hash(clean["messages"])
        out.append(clean)
    return out


def write_dataset(rows: list[dict[str, Any]], directory: Path, jsonl: Path) -> None:
    import datasets

    datasets.disable_progress_bars()
    rows = redact_rows(rows)
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    with jsonl.open("w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    if rows:
        ds = datasets.Dataset.from_list(rows)
    else:
        ds = datasets.Dataset.from_dict({"messages": [], "task": []})
    ds.save_to_disk(str(directory))
    ds.to_parquet(str(jsonl.with_suffix(".parquet")))


BASELINES = ("direct-sft", "direct-sft-stripped", "terminus2-direct")


def run(cfg: FactoryConfig, paths: FactoryPaths) -> ExportResult:
    index = EvalIndex.build(cfg)
    allow = cfg.export.allow_contamination
    result = ExportResult(unchecked_suites=dict(index.unavailable),
                          checked_eval=dict(index.checked))
    candidates = _rsr_rows(paths)
    rows, refused = guard(candidates, index, allow)
    result.refused.update(refused)
    result.refused_rows["rsr"] = len(candidates) - len(rows)
    write_dataset(rows, paths.dataset_dir, paths.dataset_jsonl)
    result.rows = len(rows)
    result.trajectories = len({r["execution_id"] for r in rows})
    result.summarised = len({r["execution_id"] for r in rows if r["segments"] > 1})
    result.files += [str(paths.dataset_dir), str(paths.dataset_jsonl)]
    if cfg.export.baselines:
        for name in BASELINES:
            candidates = _source_rows(paths, name)
            base_rows, refused = guard(candidates, index, allow)
            result.refused.update(refused)
            result.refused_rows[name] = len(candidates) - len(base_rows)
            target = paths.root / "baselines" / name
            write_dataset(base_rows, target, target.with_suffix(".jsonl"))
            result.baselines[name] = len(base_rows)
            result.files.append(str(target))
    return result
