"""Duplicate trajectories: exact after normalising run noise, and near-duplicates (MinHash LSH).

Two executions that typed the same commands and saw the same output differ anyway in what
each sandbox makes up: the container hostname in the prompt, container and commit ids,
timestamps, PIDs, temp-file names, timings. `normalize` replaces those with placeholders, so
such runs hash alike; near-duplicates (a reworded analysis, one extra `ls`) are found with
`datasketch`'s MinHash LSH over word shingles of the normalised text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

NUM_PERM = 128
SHINGLE_WORDS = 5

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_NOISE: list[tuple[re.Pattern[str], str]] = [
    # user@host in shell prompts (the container hostname differs in every sandbox)
    (re.compile(r"\b([a-z_][a-z0-9_-]*)@[A-Za-z0-9][A-Za-z0-9.-]*(?=:)"), r"\1@<HOST>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
                r"(?:Z|[+-]\d{2}:?\d{2})?"), "<TIME>"),
    (re.compile(rf"\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),?\s+)?{_MONTH}\s+\d{{1,2}}\s+"
                rf"(?:\d{{2}}:\d{{2}}(?::\d{{2}})?(?:\s+[A-Z]{{3,4}})?(?:\s+\d{{4}})?|\d{{4}})\b"),
     "<DATE>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b"), "<TIME>"),
    (re.compile(r"\b\d{10}(?:\.\d+)?\b"), "<EPOCH>"),
    # temp names: mktemp (tmp.XXXXXXXXXX), Python tempfile (tmpab12_cd3), pytest dirs
    (re.compile(r"\btmp[._]?[A-Za-z0-9_]{6,}\b"), "<TMP>"),
    (re.compile(r"\bpytest-of-\w+/pytest-\d+\b"), "<TMP>"),
    # hex ids of 12+ characters with a digit and a letter (container, image, commit ids)
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{12,64}\b"), "<HEX>"),
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,11}\b"), "<SHORTHEX>"),
    # PIDs: job control "[1] 4711", "pid 4711", /proc/4711, "process 4711"
    (re.compile(r"(\[\d+\]\+?\s+)\d+\b"), r"\1<PID>"),
    (re.compile(r"\b(pid|PID|process|Process)([ =:#]+)\d+\b"), r"\1\2<PID>"),
    (re.compile(r"/proc/\d+\b"), "/proc/<PID>"),
    # timings: "real 0m0.004s", "took 1.23s", "in 0.52 seconds"
    (re.compile(r"\b\d+m\d+(?:\.\d+)?s\b"), "<DUR>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b"), "<DUR>"),
]


def normalize(text: str) -> str:
    """`text` with sandbox noise replaced by placeholders and whitespace runs collapsed."""
    for pattern, repl in _NOISE:
        text = pattern.sub(repl, text)
    return re.sub(r"[ \t]+", " ", text).strip()


def normalized_messages(messages: Sequence[dict[str, str]]) -> list[list[str]]:
    return [[m["role"], normalize(m["content"])] for m in messages]


def normalized_hash(messages: Sequence[dict[str, str]]) -> str:
    data = json.dumps(normalized_messages(messages), ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


def word_shingles(text: str, n: int = SHINGLE_WORDS) -> set[str]:
    words = re.findall(r"\S+", text.lower())
    if len(words) < n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def minhash(shingles: Iterable[str], num_perm: int = NUM_PERM):  # noqa: ANN201 (datasketch type)
    from datasketch import MinHash

    m = MinHash(num_perm=num_perm, seed=1)
    for s in shingles:
        m.update(s.encode("utf-8"))
    return m


def trajectory_text(messages: Sequence[dict[str, str]]) -> str:
    """The normalised run after its first prompt: every run of a task shares that prompt,
    which would otherwise make any two runs of one task look alike."""
    return "\n".join(f"<{role}> {content}" for role, content in normalized_messages(messages[1:]))


@dataclass
class Duplicate:
    of: str
    how: str  # "exact" | "normalized" | "near"
    similarity: float = 1.0


@dataclass
class Deduper:
    """Order-dependent dedupe: the first trajectory of a group is kept, later ones point at it."""

    threshold: float | None = 0.9
    exact: dict[str, str] = field(default_factory=dict)
    normal: dict[str, str] = field(default_factory=dict)
    hashes: dict[str, object] = field(default_factory=dict)
    _lsh: object | None = None

    def __post_init__(self) -> None:
        if self.threshold is not None:
            from datasketch import MinHashLSH

            self._lsh = MinHashLSH(threshold=self.threshold, num_perm=NUM_PERM)

    def check(self, key: str, messages: Sequence[dict[str, str]], exact_hash: str,
              add: bool = True) -> Duplicate | None:
        """Whether `messages` duplicates a trajectory added before; adds it when it is new."""
        if exact_hash in self.exact:
            return Duplicate(self.exact[exact_hash], "exact")
        norm = normalized_hash(messages)
        if norm in self.normal:
            return Duplicate(self.normal[norm], "normalized")
        sketch = None
        if self._lsh is not None:
            sketch = minhash(word_shingles(trajectory_text(messages)))
            best: tuple[float, str] | None = None
            for other in self._lsh.query(sketch):  # type: ignore[attr-defined]
                sim = float(sketch.jaccard(self.hashes[other]))  # type: ignore[attr-defined]
                if sim >= self.threshold and (best is None or sim > best[0]):  # type: ignore[operator]
                    best = (sim, other)
            if best is not None:
                return Duplicate(best[1], "near", round(best[0], 3))
        if add:
            self.exact[exact_hash] = key
            self.normal[norm] = key
            if sketch is not None:
                self.hashes[key] = sketch
                self._lsh.insert(key, sketch)  # type: ignore[attr-defined]
        return None
