"""Typed rows that flow between the factory's stages (one JSONL file per stage)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rsr.errors import RsrError
from rsr.trajectories.model_view import Segment


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Usage(_Row):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class Rollout(_Row):
    """One discovery rollout (success or failure): the complementarity report needs both."""

    id: str
    task: str
    task_dir: str
    suite: str
    harness: str
    epoch: int
    passed: bool
    reward: float
    turns: int
    tokens: int
    sandbox_seconds: float
    log: str
    error: str | None = None


class Source(_Row):
    """A verified discovery success after compression: the public history only."""

    id: str
    task: str
    task_dir: str
    suite: str
    harness: str
    epoch: int
    reward: float
    turns: int
    tokens: int
    log: str
    instruction: str
    messages: list[dict[str, str]]
    """All segments of the Terminus 2 view, in order (for the planner and the reports)."""
    segments: list[Segment] = Field(default_factory=list)
    """The Terminus 2 view: what Terminus 2 would have shown, source-harness control removed."""
    raw_segments: list[Segment] = Field(default_factory=list)
    """The contexts the source harness's model saw, control included (Direct SFT)."""
    commands: list[str]
    dropped: list[dict[str, Any]] = Field(default_factory=list)
    """Source-harness control removed by compression: index, kind, action, chars."""
    produced_files: dict[str, str] = Field(default_factory=dict)
    """Files the source run wrote (path -> content), for answer-leak checks."""


class RunbookBody(_Row):
    """What the planner writes: how to get there, never the finished deliverable."""

    end_state: str = Field(min_length=1)
    milestones: list[str] = Field(min_length=1)
    checks: list[str] = Field(default_factory=list)
    recovery: list[str] = Field(default_factory=list)
    pitfalls: list[str] = Field(default_factory=list)

    def render(self) -> str:
        def block(title: str, items: list[str]) -> str:
            return f"{title}:\n" + "\n".join(f"- {item}" for item in items) if items else ""

        parts = [f"Required end state:\n{self.end_state}", block("Key milestones", self.milestones),
                 block("Useful checks", self.checks), block("Recovery strategies", self.recovery),
                 block("Common pitfalls", self.pitfalls)]
        return "\n\n".join(p for p in parts if p)

    def lines(self) -> list[str]:
        return [self.end_state, *self.milestones, *self.checks, *self.recovery, *self.pitfalls]


class Reason(_Row):
    """Why a critic rejected a runbook: the check, the leaked item and where it came from."""

    check: str
    item: str
    source: str

    def __str__(self) -> str:
        return f"{self.check}: {self.item!r} ({self.source})"


class Verdict(_Row):
    verdict: Literal["accept", "reject"]
    reasons: list[str] = Field(default_factory=list)
    stage: Literal["deterministic", "model"] | None = None


class Attempt(_Row):
    round: int
    raw: str
    body: RunbookBody | None = None
    verdict: Verdict


class Runbook(_Row):
    """One candidate runbook of a source, with every planner/critic round it took."""

    id: str
    source_id: str
    task: str
    candidate: int
    accepted: bool
    body: RunbookBody | None = None
    attempts: list[Attempt]
    tokens: int = 0


class Execution(_Row):
    id: str
    runbook_id: str
    source_id: str
    task: str
    suite: str
    index: int
    round: int
    passed: bool
    reward: float
    turns: int
    tokens: int
    sandbox_seconds: float
    log: str
    messages: list[dict[str, str]]
    """All segments' messages in order (audits, similarity); rows are the segments."""
    segments: list[Segment] = Field(default_factory=list)
    """The model's contexts, verbatim: one per hand-off, each ending with its last reply."""
    summarisation_calls: int = 0
    error: str | None = None


class Decision(_Row):
    """The filter's verdict on one execution."""

    execution_id: str
    kept: bool
    reasons: list[str] = Field(default_factory=list)
    underived: list[dict[str, Any]] = Field(default_factory=list)
    content_hash: str
    normalized_hash: str = ""
    """sha256 of the trajectory with hostnames, ids, times, PIDs and temp names normalised."""
    duplicate_of: str | None = None
    duplicate: Literal["exact", "normalized", "near"] | None = None
    auditor_tokens: int = 0


R = TypeVar("R", bound=BaseModel)


def content_hash(messages: list[dict[str, str]]) -> str:
    """sha256 of a conversation, insensitive to trailing whitespace (exact-duplicate key)."""
    canon = [[m["role"], m["content"].rstrip(), *([m["reasoning_content"]]
                                                  if m.get("reasoning_content") else [])]
             for m in messages]
    return hashlib.sha256(json.dumps(canon, ensure_ascii=False).encode()).hexdigest()


def write_rows(path: Path, rows: list[BaseModel]) -> None:
    """Replace a stage file atomically so an interruption never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w") as f:
        for row in rows:
            f.write(row.model_dump_json() + "\n")
    tmp.replace(path)


def read_rows(path: Path, model: type[R]) -> list[R]:
    if not path.is_file():
        return []
    rows: list[R] = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(model.model_validate_json(line))
        except ValidationError as e:
            raise RsrError(f"{path}: line {lineno}: not a {model.__name__} row: "
                           f"{e.errors()[0]['msg']}") from e
    return rows
