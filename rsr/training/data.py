"""Training data: the factory's trajectory rows -> validated, length-checked chat rows.

Input schema (JSONL, or a `datasets` directory written with `save_to_disk`), one row per
trajectory: `messages` = `[{"role": "system"|"user"|"assistant", "content": str}, ...]` where
the first user message is the Terminus 2 prompt and assistant replies alternate with user
observations, plus provenance columns (`task`, `suite`, `source_harness`, ...).

Long-trajectory policy. The end of a trajectory (the checks, the completion and its
confirmation) is what the model most needs to learn, so a row is never cut short:
- `split`: a row that does not fit is split at its hand-off messages (a run summarised at
  inference, exported as one row by a tool that does not split contexts) into the contexts
  the model really saw; each piece that fits is kept, each that does not is skipped;
- `skip`: a row that does not fit is skipped whole.
Every skipped row or piece is reported (dataset, row, task, execution id, tokens) in the run
card; nothing is truncated.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from rsr.errors import RsrError
from rsr.harness import prompts
from rsr.training.config import DatasetConfig
from rsr.training.render import render_messages


class DatasetRowError(RsrError):
    """A dataset row is malformed; names the file, the row index and the problem."""

    def __init__(self, path: str | Path, row: int, problem: str) -> None:
        self.path = str(path)
        self.row = row
        self.problem = problem
        text = f"{self.path}: row {row}: {problem}"
        super().__init__(text)
        self.args = (text,)  # str(e) is the message, not the constructor arguments


class MaskCheckError(RsrError):
    """The loss mask does not cover exactly the tokens the model emits at inference."""


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str
    reasoning_content: str | None = None
    """The model's reasoning before a reply, when the executor produced any."""


class TrajectoryRow(BaseModel):
    """One trajectory as the factory exports it. Provenance columns are optional here and
    extra columns are kept (the factory may add some); only `messages` is trained on."""

    model_config = ConfigDict(extra="allow")

    messages: list[Message]
    task: str | None = None
    suite: str | None = None
    source_harness: str | None = None
    source_trajectory: str | None = None
    runbook_id: str | None = None
    execution_id: str | None = None
    reward: float | None = None
    turns: int | None = None
    tokens: int | None = None
    content_hash: str | None = None


def _structure_problem(messages: Sequence[Message]) -> str | None:
    if not messages:
        return "`messages` is empty"
    body = list(messages)
    if body[0].role == "system":
        body = body[1:]
    for i, m in enumerate(messages[1:], start=1):
        if m.role == "system":
            return f"messages[{i}]: a system message is allowed only as the first message"
    if not body or body[0].role != "user":
        return "the first non-system message must be the user prompt"
    offset = len(messages) - len(body)
    for i, m in enumerate(body):
        expected = "user" if i % 2 == 0 else "assistant"
        if m.role != expected:
            return (f"messages[{i + offset}]: expected role {expected!r} (user and assistant must"
                    f" alternate), got {m.role!r}")
    if not any(m.role == "assistant" for m in body):
        return "no assistant message: nothing to train on"
    return None


def _iter_raw(path: Path) -> Iterator[tuple[int, Any]]:
    if path.is_dir():
        import datasets

        try:
            ds = datasets.load_from_disk(str(path))
        except Exception as e:  # datasets raises several types for a bad directory
            raise RsrError(f"{path}: not a `datasets` directory written by save_to_disk: {e}") from e
        if isinstance(ds, datasets.DatasetDict):
            if "train" not in ds:
                raise RsrError(f"{path}: DatasetDict without a 'train' split ({list(ds)})")
            ds = ds["train"]
        yield from enumerate(ds)
        return
    with path.open() as f:
        index = 0
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield index, json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetRowError(path, index, f"line {lineno} is not valid JSON: {e}") from e
            index += 1


def validate_row(raw: Any, path: str | Path, index: int) -> TrajectoryRow:
    if not isinstance(raw, dict):
        raise DatasetRowError(path, index, f"expected a JSON object, got {type(raw).__name__}")
    try:
        row = TrajectoryRow.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise DatasetRowError(path, index, f"{where}: {err['msg']}") from e
    problem = _structure_problem(row.messages)
    if problem:
        raise DatasetRowError(path, index, problem)
    return row


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for p in files:
        if path.is_dir():
            h.update(str(p.relative_to(path)).encode() + b"\0")
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return "sha256:" + h.hexdigest()


@dataclass
class LoadedDataset:
    config: DatasetConfig
    name: str
    sha256: str
    rows: list[TrajectoryRow]
    trailing_messages_stripped: int = 0


def load_dataset(cfg: DatasetConfig) -> LoadedDataset:
    """Read and validate every row; the first malformed row raises `DatasetRowError`."""
    path = Path(cfg.path)  # a recipe file's relative paths are resolved when it is loaded
    if not path.exists():
        raise RsrError(f"dataset {path.absolute()} not found")
    rows, stripped = [], 0
    for index, raw in _iter_raw(path):
        row = validate_row(raw, path, index)
        # Observations after the last reply carry no training signal.
        while row.messages[-1].role != "assistant":
            row.messages.pop()
            stripped += 1
        rows.append(row)
    if not rows:
        raise RsrError(f"dataset {path} has no rows")
    return LoadedDataset(cfg, cfg.name or path.name, file_sha256(path), rows, stripped)


def validation_tasks(rows: Sequence[TrajectoryRow], fraction: float, named: Sequence[str],
                     seed: int) -> set[str]:
    """Tasks held out for validation: the named ones plus a seeded, order-independent share
    of the rest (ranked by a hash of seed and task), at least one when the share is > 0 and
    there are two tasks or more."""
    tasks = sorted({r.task for r in rows if r.task})
    held = {t for t in named if t in tasks}
    rest = [t for t in tasks if t not in held]
    if fraction > 0 and len(tasks) >= 2:
        want = max(1, round(fraction * len(tasks))) - len(held)
        ranked = sorted(rest, key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).hexdigest())
        held |= set(ranked[:max(want, 0)])
    return held


def token_ids(tokenizer: Any, text: str) -> list[int]:
    # apply_chat_template tokenizes without adding BOS/EOS; so must every count here.
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass
class LengthStats:
    rows_in: int = 0
    rows_kept: int = 0
    rows_dropped_too_long: int = 0
    """Rows, or pieces of split rows, skipped because they do not fit."""
    rows_split: int = 0
    """Rows split at their hand-off messages."""
    steps_kept: int = 0
    steps_dropped_too_long: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: LengthStats) -> None:
        for k in self.__dataclass_fields__:
            setattr(self, k, getattr(self, k) + getattr(other, k))


HANDOFF_HEAD = prompts.load(prompts.HANDOFF).split("\n", 1)[0]
"""First line of the Terminus 2 hand-off message (rsr/harness/prompts/handoff.v1.md)."""


def split_at_handoffs(msgs: list[dict[str, str]]) -> list[list[dict[str, str]]]:
    """The contexts of a flattened summarised run: a new one starts at each hand-off."""
    pieces: list[list[dict[str, str]]] = [[]]
    for i, m in enumerate(msgs):
        if i and m["role"] == "user" and m["content"].startswith(HANDOFF_HEAD):
            pieces.append([])
        pieces[-1].append(m)
    out = []
    for piece in pieces:
        while piece and piece[-1]["role"] != "assistant":
            piece.pop()
        if piece:
            out.append(piece)
    return out


def fit_to_length(
    rows: Sequence[TrajectoryRow],
    tokenizer: Any,
    chat_template: str,
    max_length: int,
    policy: Literal["split", "skip"],
    dataset: str = "",
) -> tuple[list[list[dict[str, str]]], LengthStats]:
    """Apply the long-trajectory policy; returns chat rows (lists of message dicts) and counts."""
    out: list[list[dict[str, str]]] = []
    stats = LengthStats(rows_in=len(rows))

    def length(msgs: Sequence[dict[str, Any]]) -> int:
        return len(token_ids(tokenizer, render_messages(msgs, chat_template=chat_template)))

    for index, row in enumerate(rows):
        msgs = [m.model_dump(exclude_none=True) for m in row.messages]
        pieces = [msgs]
        if length(msgs) > max_length and policy == "split":
            pieces = split_at_handoffs(msgs)
            stats.rows_split += len(pieces) > 1
        for n, piece in enumerate(pieces):
            replies = sum(m["role"] == "assistant" for m in piece)
            tokens = length(piece)
            if tokens <= max_length:
                out.append(piece)
                stats.rows_kept += 1
                stats.steps_kept += replies
                continue
            stats.rows_dropped_too_long += 1
            stats.steps_dropped_too_long += replies
            stats.skipped.append({"dataset": dataset, "row": index, "piece": n,
                                  "pieces": len(pieces), "task": row.task,
                                  "execution_id": row.execution_id,
                                  "source_trajectory": row.source_trajectory,
                                  "tokens": tokens, "max_length": max_length})
    return out, stats


def mix(
    datasets: Sequence[tuple[DatasetConfig, list[list[dict[str, str]]]]], seed: int
) -> tuple[list[list[dict[str, str]]], list[int]]:
    """Apply mixing weights and shuffle; returns the rows and the count taken from each dataset.

    A weight w uses each row floor(w) times plus a seeded random fraction (w - floor(w)).
    """
    rng = random.Random(seed)
    mixed: list[list[dict[str, str]]] = []
    counts = []
    for cfg, rows in datasets:
        whole = int(cfg.weight)
        part = rng.sample(rows, round((cfg.weight - whole) * len(rows)))
        taken = rows * whole + part
        counts.append(len(taken))
        mixed.extend(taken)
    rng.shuffle(mixed)
    return mixed, counts


def expected_assistant_mask(
    tokenizer: Any, chat_template: str, messages: Sequence[dict[str, str]], eos_token: str
) -> tuple[list[int], list[int]]:
    """Token ids of the rendered row and the mask of the tokens the model emits at inference.

    Derived independently of the template's generation markers: for each reply, inference
    renders the history with a generation prompt and the model produces the reply followed by
    the end-of-turn token. So the prompt's tokens must be a prefix of the row's tokens, and
    the trained span is everything from there up to and including the first end-of-turn token,
    which must decode to the reply exactly.
    """
    ids = token_ids(tokenizer, render_messages(messages, chat_template=chat_template))
    eos_id = tokenizer.convert_tokens_to_ids(eos_token)
    mask = [0] * len(ids)
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        prompt = token_ids(tokenizer, render_messages(messages[:i], chat_template=chat_template,
                                                      add_generation_prompt=True))
        if ids[: len(prompt)] != prompt:
            raise MaskCheckError(
                f"messages[{i}]: the inference prompt does not tokenize to a prefix of the training"
                " row; the template or tokenizer renders history differently at inference")
        start = len(prompt)
        try:
            end = ids.index(eos_id, start)
        except ValueError:
            raise MaskCheckError(f"messages[{i}]: no {eos_token!r} after the reply") from None
        reply = tokenizer.decode(ids[start:end], skip_special_tokens=False,
                                 clean_up_tokenization_spaces=False)
        reasoning = m.get("reasoning_content")
        # With reasoning, the model emits the template's reasoning block, then the reply.
        ok = reply == m["content"] or (bool(reasoning) and reply.endswith(m["content"])
                                       and reasoning in reply[: len(reply) - len(m["content"])])
        if not ok:
            raise MaskCheckError(f"messages[{i}]: the tokens before {eos_token!r} decode to"
                                 f" {reply[:80]!r}, not to the reply {m['content'][:80]!r}")
        mask[start : end + 1] = [1] * (end + 1 - start)
    return ids, mask


@dataclass
class MaskReport:
    rows_checked: int = 0
    assistant_tokens_checked: int = 0
    problems: list[str] = field(default_factory=list)


def compare_mask(row: int, ids: list[int], mask: list[int], input_ids: Sequence[int],
                 labels: Sequence[int]) -> str | None:
    """Compare a prepared row (input_ids, labels with -100 = no loss) with the expected mask."""
    if list(input_ids) != ids:
        return f"row {row}: trainer token ids differ from the rendered row"
    trained = [int(label != -100) for label in labels]
    if trained != mask:
        first = next(i for i, (a, b) in enumerate(zip(trained, mask, strict=True)) if a != b)
        return (f"row {row}: loss mask differs from the assistant tokens at position {first}"
                f" (trainer {trained[first]}, expected {mask[first]})")
    if any(label != tok for label, tok in zip(labels, input_ids, strict=True) if label != -100):
        return f"row {row}: labels are not the input tokens"
    return None
