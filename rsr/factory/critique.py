"""Stage 4 (inside planning), critique: deterministic checks first, then a model review.

Deterministic checks, each reason naming the leaked item and where it came from:
- schema: the runbook parses as `RunbookBody`;
- harness control: words of the discovery harnesses' control prompts or reply protocol;
- unsupported tools: tools the Terminus 2 harness does not have (it only types keystrokes into
  a terminal), and network use in a sandbox without network;
- verifier leakage: names or paths of hidden test files, lines or 8-word runs of their
  content, and expected values that appear only in the tests (not in the instruction or the
  environment the agent can see);
- answer leakage: lines or 8-word runs of the reference solution or of files the source run
  produced (unless public), and finished deliverables (long code blocks or heredocs).

The model review sees only the public task (instruction) and the runbook.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, Model
from pydantic import ValidationError

from rsr.factory.records import Reason, RunbookBody, Source, Verdict
from rsr.harness import prompts as harness_prompts
from rsr.tasks.load import LoadedTask, iter_files

SHINGLE = 8
MIN_LINE = 20
DELIVERABLE_LINES = 6
MAX_TEXT_BYTES = 200_000

CONTROL_WORDS = [
    (r"\btask_complete\b", "Terminus 2 reply protocol"),
    (r"\bkeystrokes\b", "Terminus 2 reply protocol"),
    (r"\bnext_state\b", "StateM reply protocol"),
    (r"\[workflow\]", "StateM workflow display"),
    (r"\bstate ?machine\b", "StateM workflow"),
    (r"\bStateM\b|\bRSRT\b|\bTerminus ?2\b", "harness name"),
    (r"\bare you sure\b", "Terminus 2 confirmation prompt"),
    (r"\bindependent check\b|\bhidden verification\b|\breflection (step|prompt)\b",
     "RSRT reflection prompt"),
    (r"\bhand-?(over|off) summary\b", "context hand-off prompt"),
]
TOOL_WORDS = [
    r"\bstr_replace(_based_edit_tool|_editor)?\b", r"\btext_editor\b", r"\bapply_patch\b",
    r"\bweb_search\b", r"\bweb_browser\b", r"\bbrowser tool\b", r"\bcomputer tool\b",
    r"\b(python|bash|shell|editor|file|search|read_file|write_file|think|submit) tool\b",
    r"\b(use|call|invoke) the [\w-]+ (tool|function)\b", r"\bsubmit\(",
]
NETWORK_WORDS = [r"\b(curl|wget)\s+\S*https?://", r"\bpip3? install\b", r"\bapt(-get)? install\b",
                 r"\bnpm install\b", r"\bgit clone\s+\S*(https?|git@)"]
GENERIC_TEST_FILES = {"test.sh"}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_./:-]+", text.lower())


def shingles(text: str, n: int = SHINGLE) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def _read_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_TEXT_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def _dir_texts(root: Path | None) -> dict[str, str]:
    if root is None or not root.is_dir():
        return {}
    out = {}
    for rel, path in iter_files(root):
        text = _read_text(path)
        if text is not None:
            out[rel] = text
    return out


@dataclass
class TaskMaterial:
    """What the agent may see (public) and what it must never be handed (hidden)."""

    instruction: str
    public: str
    tests: dict[str, str]
    solution: dict[str, str]
    produced: dict[str, str] = field(default_factory=dict)
    allow_internet: bool = False

    @classmethod
    def of(cls, task: LoadedTask, source: Source | None = None) -> TaskMaterial:
        env = _dir_texts(task.paths.environment_dir)
        public = "\n".join([task.instruction, *env.values()])
        solution = _dir_texts(task.paths.solution_dir)
        for name in ("solution.sh", "solution.yaml"):  # Terminal-Bench 1 layout
            text = _read_text(task.paths.task_dir / name)
            if text is not None:
                solution[name] = text
        return cls(instruction=task.instruction, public=public,
                   tests=_dir_texts(task.paths.tests_dir), solution=solution,
                   produced=dict(source.produced_files) if source else {},
                   allow_internet=task.config.environment.allow_internet)


def parse_runbook(raw: str | dict) -> tuple[RunbookBody | None, list[Reason]]:
    """Schema check: a JSON object with exactly the runbook fields."""
    if isinstance(raw, str):
        start, end = raw.find("{"), raw.rfind("}")
        if start < 0 or end <= start:
            return None, [Reason(check="schema", item="no JSON object", source="runbook")]
        try:
            data = json.loads(raw[start:end + 1])
        except json.JSONDecodeError as e:
            return None, [Reason(check="schema", item=f"invalid JSON: {e.msg}", source="runbook")]
    else:
        data = raw
    if isinstance(data, dict) and isinstance(data.get("runbook"), dict):
        data = data["runbook"]
    try:
        return RunbookBody.model_validate(data), []
    except ValidationError as e:
        return None, [Reason(check="schema", item=f"{'.'.join(str(p) for p in err['loc'])}: "
                                                  f"{err['msg']}", source="runbook")
                      for err in e.errors()]


def _control_lines() -> list[tuple[str, str]]:
    """Distinctive lines of the harnesses' control prompts (never of the task-facing ones)."""
    out = []
    for name in (harness_prompts.CONFIRM, harness_prompts.REFLECTION, harness_prompts.STATEM,
                 harness_prompts.STATEM_DISPLAY, harness_prompts.PARSE_ERROR,
                 harness_prompts.HANDOFF, harness_prompts.SUMMARY):
        for line in harness_prompts.load(name).splitlines():
            if len(line.strip()) >= 30 and "$" not in line:
                out.append((_norm(line), name))
    return out


def _lines(text: str, min_len: int = MIN_LINE) -> list[tuple[str, str]]:
    """(normalised, original) lines long enough to be distinctive."""
    return [(_norm(line), line.strip()) for line in text.splitlines()
            if len(_norm(line)) >= min_len]


def _overlap(check: str, label: str, files: dict[str, str], runbook: str, public: str,
             public_shingles: set[tuple[str, ...]]) -> list[Reason]:
    """Lines and 8-word runs of hidden files that the runbook repeats (unless public)."""
    reasons: list[Reason] = []
    norm_runbook, norm_public = _norm(runbook), _norm(public)
    runbook_shingles = shingles(runbook)
    for rel, text in files.items():
        hits = [original for line, original in _lines(text)
                if line in norm_runbook and line not in norm_public]
        for line in hits[:3]:
            reasons.append(Reason(check=check, item=line[:120], source=f"line of {label}{rel}"))
        if hits:
            continue
        common = (shingles(text) & runbook_shingles) - public_shingles
        if common:
            run = " ".join(sorted(common)[0])
            reasons.append(Reason(check=check, item=run[:120],
                                  source=f"{len(common)} {SHINGLE}-word run(s) of {label}{rel}"))
    return reasons


_LITERAL = re.compile(r"\"([^\"\n]{3,80})\"|'([^'\n]{3,80})'|(?<![\w.])(\d+(?:\.\d+)+|\d{3,})(?![\w.])")


def expected_values(tests: dict[str, str], public: str) -> dict[str, str]:
    """Literals of the test files that the agent cannot see anywhere: value -> test file."""
    out: dict[str, str] = {}
    for rel, text in tests.items():
        for m in _LITERAL.finditer(text):
            value = next(g for g in m.groups() if g is not None).strip()
            distinctive = bool(re.search(r"[\d\W]", value)) or len(value) >= 10
            if len(value) < 3 or not distinctive or value in public:
                continue
            if re.fullmatch(r"[\W_]+|%\w|\{\w*\}|\\\w", value):
                continue
            out.setdefault(value, rel)
    return out


def deterministic_checks(task: LoadedTask, raw: str | dict, source: Source | None = None
                         ) -> tuple[RunbookBody | None, list[Reason]]:
    body, reasons = parse_runbook(raw)
    if body is None:
        return None, reasons
    text = body.render()
    low = text.lower()
    material = TaskMaterial.of(task, source)
    public_shingles = shingles(material.public)
    norm_public = _norm(material.public)

    for pattern, where in CONTROL_WORDS:
        m = re.search(pattern, text, re.I)
        if m and m.group(0).lower() not in norm_public:
            reasons.append(Reason(check="harness control", item=m.group(0), source=where))
    norm_text = _norm(text)
    for line, name in _control_lines():
        if line in norm_text:
            reasons.append(Reason(check="harness control", item=line[:120],
                                  source=f"harness prompt {name}"))
    for pattern in TOOL_WORDS:
        m = re.search(pattern, text, re.I)
        if m:
            reasons.append(Reason(check="unsupported tool", item=m.group(0),
                                  source="Terminus 2 has only a terminal (keystrokes)"))
    if not material.allow_internet:
        for pattern in NETWORK_WORDS:
            m = re.search(pattern, text, re.I)
            if m:
                reasons.append(Reason(check="unsupported tool", item=m.group(0),
                                      source="the task sandbox has no network"))

    # Verifier leakage.
    m = re.search(r"(?<![\w.])/tests\b|/logs/verifier|\breward\.(txt|json)\b", text)
    if m:
        reasons.append(Reason(check="verifier leakage", item=m.group(0),
                              source="path of the hidden verifier"))
    for rel in material.tests:
        name = Path(rel).name
        if name in GENERIC_TEST_FILES or name.lower() in low and name.lower() in norm_public:
            continue
        if re.search(rf"(?<![\w-]){re.escape(name.lower())}(?![\w-])", low):
            reasons.append(Reason(check="verifier leakage", item=name,
                                  source=f"name of hidden test file tests/{rel}"))
    reasons += _overlap("verifier leakage", "hidden test tests/", material.tests, text,
                        material.public, public_shingles)
    for value, rel in expected_values(material.tests, material.public).items():
        if re.search(rf"(?<![\w]){re.escape(value)}(?![\w])", text):
            reasons.append(Reason(check="verifier leakage", item=value,
                                  source=f"expected value found only in hidden test tests/{rel}"))

    # Answer leakage.
    reasons += _overlap("answer leakage", "reference solution solution/", material.solution, text,
                        material.public, public_shingles)
    reasons += _overlap("answer leakage", "file produced by the source run ",
                        material.produced, text, material.public, public_shingles)
    for item in body.lines():
        block = re.search(r"```.*?```|<<-?\s*'?\"?(\w+)'?\"?.*", item, re.S)
        if block and block.group(0).count("\n") >= DELIVERABLE_LINES:
            reasons.append(Reason(check="answer leakage",
                                  item=block.group(0).splitlines()[0][:120],
                                  source=f"finished deliverable ({block.group(0).count(chr(10))}"
                                         "-line code block in the runbook)"))
    return body, _dedupe(reasons)


def _dedupe(reasons: Iterable[Reason]) -> list[Reason]:
    seen, out = set(), []
    for r in reasons:
        key = (r.check, r.item)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def load_prompt(name: str) -> str:
    return (resources.files("rsr.factory") / "prompts" / f"{name}.md").read_text(encoding="utf-8")


CRITIC_PROMPT = "critic.v1"


async def model_review(model: Model, instruction: str, body: RunbookBody,
                       temperature: float | None = 0.0) -> tuple[Verdict, int]:
    """The model critic: sees the public task and the runbook only. Returns (verdict, tokens)."""
    system = load_prompt(CRITIC_PROMPT)
    user = f"Task instruction:\n{instruction.strip()}\n\nRunbook:\n{body.render()}"
    output = await model.generate([ChatMessageSystem(content=system), ChatMessageUser(content=user)],
                                  config=GenerateConfig(temperature=temperature))
    tokens = output.usage.total_tokens if output.usage else 0
    return parse_verdict(output.completion), tokens


def parse_verdict(text: str) -> Verdict:
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start:end + 1]) if start >= 0 < end else None
        verdict = Verdict.model_validate({**data, "stage": "model"}) if isinstance(data, dict) \
            else None
    except (json.JSONDecodeError, ValidationError):
        verdict = None
    if verdict is None:
        return Verdict(verdict="reject", stage="model",
                       reasons=[f"critic reply is not a verdict object: {text[:200]!r}"])
    if verdict.verdict == "reject" and not verdict.reasons:
        verdict.reasons = ["model critic rejected without reasons"]
    return verdict


def deterministic_verdict(reasons: list[Reason]) -> Verdict:
    return Verdict(verdict="reject" if reasons else "accept", stage="deterministic",
                   reasons=[str(r) for r in reasons])
