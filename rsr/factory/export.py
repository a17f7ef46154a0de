"""Stage 7, export: the kept rewrites as a Hugging Face dataset, plus the two baselines.

- `<out>/dataset/` (`save_to_disk`), `<out>/dataset.jsonl`, `<out>/dataset.parquet`: RSR rows;
- `<out>/baselines/direct-sft[.jsonl]`: every discovery success, control stripped (the paper's
  "Direct SFT");
- `<out>/baselines/terminus2-direct[.jsonl]`: the Terminus 2 discovery successes;
- `<out>/DATASET_CARD.md` (also `dataset/README.md`): funnel, costs, refusals.

Rows have `messages` ([{role, content}], the Terminus 2 public history: first prompt, replies,
observations) and provenance columns. The contamination guard refuses rows whose task belongs
to an evaluation suite, shares a name, files or most of its instruction with an evaluation
task, unless `export.allow_contamination` is set (then rows are kept and marked).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsr.errors import RsrError
from rsr.factory.config import FactoryConfig
from rsr.factory.critique import shingles
from rsr.factory.ledger import FactoryPaths
from rsr.factory.records import Decision, Execution, Runbook, Source, content_hash, read_rows
from rsr.suites.registry import resolve_suite_path
from rsr.tasks.load import LoadedTask, iter_files, load_dataset, load_task
from rsr.trajectories.redact import environment_secrets, redact

MIN_FILE_BYTES = 64


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


@dataclass
class EvalIndex:
    """The evaluation tasks the training data must stay away from."""

    suites: set[str]
    tasks: list[tuple[str, LoadedTask]] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    threshold: float = 0.5

    @classmethod
    def build(cls, cfg: FactoryConfig) -> EvalIndex:
        index = cls(suites=set(cfg.export.eval_suites), threshold=cfg.export.instruction_overlap)
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
        return index

    def check(self, task: LoadedTask, suite: str) -> list[str]:
        reasons: list[str] = []
        if suite in self.suites:
            reasons.append(f"task {task.name} is from evaluation suite {suite!r}")
        own = shingles(task.instruction)
        files = _task_files(task)
        for label, other in self.tasks:
            where = f"evaluation task {other.name} ({label})"
            if other.paths.task_dir.resolve() == task.paths.task_dir.resolve():
                reasons.append(f"task {task.name} is {where}")
                continue
            if other.name == task.name:
                reasons.append(f"task {task.name} has the name of {where}")
            theirs = shingles(other.instruction)
            if own and theirs:
                share = len(own & theirs) / min(len(own), len(theirs))
                if share >= self.threshold:
                    reasons.append(f"instruction of {task.name} overlaps {where}: "
                                   f"{share:.0%} of 8-word shingles")
            common = set(files) & set(_task_files(other))
            if common:
                reasons.append(f"{task.name} shares file {files[sorted(common)[0]]} with {where}")
        return reasons


@dataclass
class ExportResult:
    rows: int = 0
    refused: dict[str, list[str]] = field(default_factory=dict)
    baselines: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def _rsr_rows(paths: FactoryPaths, model: str) -> list[dict[str, Any]]:
    sources = {s.id: s for s in read_rows(paths.stage_file("sources"), Source)}
    executions = {e.id: e for e in read_rows(paths.stage_file("executions"), Execution)}
    runbooks = {r.id: r for r in read_rows(paths.stage_file("runbooks"), Runbook)}
    rows = []
    for d in read_rows(paths.stage_file("decisions"), Decision):
        if not d.kept:
            continue
        e = executions[d.execution_id]
        source = sources[e.source_id]
        runbook = runbooks[e.runbook_id]
        rows.append({
            "messages": e.messages, "kind": "rsr", "task": e.task, "suite": e.suite,
            "source_harness": source.harness, "source_trajectory": f"{source.log}#{source.id}",
            "runbook_id": e.runbook_id, "execution_id": e.id, "reward": e.reward,
            "turns": e.turns, "tokens": e.tokens, "content_hash": d.content_hash,
            "runbook_rounds": len(runbook.attempts), "model": model, "log": e.log,
            "task_dir": source.task_dir})
    return rows


def _source_rows(paths: FactoryPaths, model: str, harness: str | None) -> list[dict[str, Any]]:
    rows = []
    for s in read_rows(paths.stage_file("sources"), Source):
        if harness is not None and s.harness != harness:
            continue
        rows.append({
            "messages": s.messages, "kind": "direct" if harness else "direct-sft", "task": s.task,
            "suite": s.suite, "source_harness": s.harness,
            "source_trajectory": f"{s.log}#{s.id}", "runbook_id": None, "execution_id": None,
            "reward": s.reward, "turns": s.turns, "tokens": s.tokens,
            "content_hash": content_hash(s.messages), "runbook_rounds": 0, "model": model,
            "log": s.log, "task_dir": s.task_dir})
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


def run(cfg: FactoryConfig, paths: FactoryPaths) -> ExportResult:
    model = cfg.models.for_role("executor")
    index = EvalIndex.build(cfg)
    allow = cfg.export.allow_contamination
    result = ExportResult()
    rows, refused = guard(_rsr_rows(paths, model), index, allow)
    result.refused.update(refused)
    write_dataset(rows, paths.dataset_dir, paths.dataset_jsonl)
    result.rows = len(rows)
    result.files += [str(paths.dataset_dir), str(paths.dataset_jsonl)]
    if cfg.export.baselines:
        for name, harness in (("direct-sft", None), ("terminus2-direct", "terminus2")):
            base_rows, refused = guard(_source_rows(paths, cfg.models.model, harness), index, allow)
            result.refused.update(refused)
            target = paths.root / "baselines" / name
            write_dataset(base_rows, target, target.with_suffix(".jsonl"))
            result.baselines[name] = len(base_rows)
            result.files.append(str(target))
    return result
