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
  produced (unless public), and finished deliverables (long code blocks or heredocs);
- reworded leakage: shell commands of `solve.sh` and the test scripts compared as parsed
  tokens (quoting, whitespace and flag order do not matter), hashes of the hidden files in
  any case and shortened to 7+ characters, and values that the source run produced and the
  tests or the solution also hold.

`reply_leaks` runs the value checks over an execution's replies (a hidden value typed before
any observation showed it) and drops replies that talk about the private guidance.

The model review sees only the public task (instruction) and the runbook.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, Model
from pydantic import ValidationError

from rsr.factory.records import Reason, RunbookBody, Source, Verdict
from rsr.harness import prompts as harness_prompts
from rsr.harness.prompts.pack import prompt_pack
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
    # Terminus 2's own wording now lives in the prompt pack the harness renders with.
    pack = prompt_pack("rsr")
    for key, text in pack.texts.items():
        for line in text.splitlines():
            if len(line.strip()) >= 30 and "{" not in line:
                out.append((_norm(line), f"{pack.name}:{key}"))
    return out


def source_control_lines() -> list[tuple[str, str]]:
    """Distinctive lines of what only StateM and RSRT show (Terminus 2's own are allowed)."""
    out = []
    for name in (harness_prompts.REFLECTION, harness_prompts.STATEM,
                 harness_prompts.STATEM_DISPLAY):
        for line in harness_prompts.load(name).splitlines():
            if len(line.strip()) >= 30 and "$" not in line:
                out.append((_norm(line), name))
    return out


SOURCE_CONTROL_PATTERNS = [
    (re.compile(r"\[workflow\] (?:state:|move to|task_complete ignored)"), "statem_display"),
    (re.compile(r"An independent check of your work was run"), "reflection"),
]

_PUNCT = ";&|()<>"
_SPECIAL = set("%$\'\"{}*^[]=@")


def shell_tokens(text: str) -> list[str]:
    """Shell words of `text` as bash would split them (quotes removed, operators apart)."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=_PUNCT)
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        return list(lex)
    except ValueError:  # unbalanced quotes in prose: fall back to plain words
        return [w.strip("'\"`") for w in re.findall(r"[^\s;&|()<>]+|[;&|()<>]+", text)]


def _expand(token: str) -> list[str]:
    if re.fullmatch(r"-[A-Za-z]{2,}", token):  # -la == -l -a; long single-dash options too
        return sorted(f"-{c}" for c in token[1:])
    if token.startswith("--") and "=" in token:
        flag, value = token.split("=", 1)
        return [flag, value]
    return [token]


def command_bags(text: str) -> list[tuple[Counter[str], str]]:
    """Each simple command of `text` (split at pipes, ;, &&, subshells) as a bag of words,
    with combined short flags expanded: word order and quoting do not change a bag."""
    out: list[tuple[Counter[str], str]] = []
    for line in text.splitlines():
        line = line.strip().lstrip("$").strip()
        if not line or line.startswith("#"):
            continue
        current: list[str] = []
        for tok in [*shell_tokens(line), ";"]:
            if tok and all(c in _PUNCT for c in tok):
                if current:
                    words = [w.strip("`") for t in current for w in _expand(t) if w.strip("`")]
                    if words:
                        out.append((Counter(words), " ".join(current)))
                current = []
            else:
                current.append(tok)
    return out


def line_bags(text: str) -> list[tuple[Counter[str], str]]:
    """Each command line of `text` that joins commands (a pipeline, a redirection, a list) as
    one bag: its commands' words and its operators. A short pipeline such as
    `grep -c ERROR app.log > count.txt` is distinctive as a whole though each of its commands
    is too short to count alone."""
    out: list[tuple[Counter[str], str]] = []
    for line in text.splitlines():
        line = line.strip().lstrip("$").strip()
        if not line or line.startswith("#"):
            continue
        tokens = shell_tokens(line)
        operators = [t for t in tokens if t and all(c in _PUNCT for c in t)]
        if not operators:
            continue
        words = [w.strip("`") for t in tokens if t not in operators for w in _expand(t) if w.strip("`")]
        out.append((Counter(words) + Counter(operators), line))
    return out


def _weight(bag: Counter[str]) -> int:
    """How distinctive a command is: its words, plus extra for quoted or special arguments."""
    return sum(bag.values()) + 2 * sum(n for w, n in bag.items() if set(w) & _SPECIAL)


MIN_COMMAND_WEIGHT = 6
_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{7,64}(?![0-9A-Za-z])")


def hidden_hashes(material: TaskMaterial) -> dict[str, str]:
    """Hex ids (7+ characters, at least one digit and one letter) of the hidden files that
    the agent cannot see: lowercase id -> where it is."""
    out: dict[str, str] = {}
    public = material.public.lower()
    for label, files in (("hidden test tests/", material.tests),
                         ("reference solution solution/", material.solution),
                         ("file produced by the source run ", material.produced)):
        for rel, text in files.items():
            for m in _HEX.finditer(text):
                h = m.group(0).lower()
                if re.search(r"\d", h) and re.search(r"[a-f]", h) and h not in public:
                    out.setdefault(h, f"{label}{rel}")
    return out


def hash_leaks(text: str, hashes: dict[str, str], public: str = "") -> list[Reason]:
    reasons = []
    low_public = public.lower()
    for m in _HEX.finditer(text):
        token = m.group(0).lower()
        if token in low_public or not (re.search(r"\d", token) and re.search(r"[a-f]", token)):
            continue
        for h, where in hashes.items():
            if h.startswith(token) or (len(h) >= 7 and token.startswith(h)):
                reasons.append(Reason(check="verifier leakage" if "test" in where
                                      else "answer leakage",
                                      item=m.group(0), source=f"hash from {where}"))
                break
    return reasons


_VALUE = re.compile(r"(?<![\w.])(?=[\w.:/+-]*\d)[\w.:/+-]{4,}(?![\w])")


def produced_values(material: TaskMaterial) -> dict[str, str]:
    """Values the source run produced that the tests or the solution also hold (expected
    outputs), or that are computed numbers (decimals, 5+ digits); never public ones."""
    hidden = "\n".join([*material.tests.values(), *material.solution.values()])
    out: dict[str, str] = {}
    for rel, text in material.produced.items():
        for m in _VALUE.finditer(text):
            value = m.group(0).strip(".:/-")
            if len(value) < 4 or value in material.public:
                continue
            computed = bool(re.fullmatch(r"-?\d+\.\d+|\d{5,}", value))
            if computed or re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", hidden):
                out.setdefault(value, rel)
    return out


def command_leaks(text: str, material: TaskMaterial) -> list[Reason]:
    """Commands of solve.sh or the test scripts that `text` repeats, however it quotes, spaces
    or orders their words; commands the public task material shows do not count."""
    public = [bag for bag, _ in command_bags(material.public)]
    hidden: list[tuple[Counter[str], str, str]] = []
    for label, files in (("reference solution solution/", material.solution),
                         ("hidden test tests/", material.tests)):
        for rel, body in files.items():
            if rel.endswith((".sh", ".bash")) or rel in ("solution.sh",) or \
                    body.startswith("#!/bin/"):
                hidden += [(bag, cmd, f"{label}{rel}") for bag, cmd in command_bags(body)]
    public_lines = [bag for bag, _ in line_bags(material.public)]
    for label, files in (("reference solution solution/", material.solution),
                         ("hidden test tests/", material.tests)):
        for rel, body in files.items():
            if rel.endswith((".sh", ".bash")) or rel in ("solution.sh",) or \
                    body.startswith("#!/bin/"):
                hidden += [(bag, cmd, f"{label}{rel}") for bag, cmd in line_bags(body)
                           if not any(not (bag - p) for p in public_lines)]
    mine = command_bags(text) + line_bags(text)
    reasons: list[Reason] = []
    for bag, cmd, where in hidden:
        if _weight(bag) < MIN_COMMAND_WEIGHT or any(not (bag - p) for p in public):
            continue
        if any(not (bag - other) for other, _ in mine):
            check = "verifier leakage" if "test" in where else "answer leakage"
            reasons.append(Reason(check=check, item=cmd[:120],
                                  source=f"command of {where} (as parsed tokens)"))
    return reasons


GUIDANCE_MENTIONS = re.compile(
    r"\b(?:my|the|our)\s+(?:private\s+|hidden\s+|secret\s+)?(?:guidance|runbook|hints?|playbook)"
    r"\s+(?:says|said|suggests|tells|told|mentions|notes|recommends|states|warns|was)\b"
    r"|\b(?:the\s+)?(?:hint|guidance|runbook|instructions)\s+(?:that\s+)?I\s+(?:was|were|have\s+been)"
    r"\s+(?:given|provided|shown|handed)\b"
    r"|\b(?:according\s+to|as\s+per|following|per)\s+(?:the|my)\s+(?:private\s+|provided\s+)?"
    r"(?:guidance|runbook|hints?|playbook)\b"
    r"|\b(?:private|hidden|secret)\s+(?:guidance|runbook|hints?|instructions)\b"
    r"|\bI\s+(?:was|have\s+been)\s+(?:told|advised|instructed)\s+(?:privately|in\s+advance|beforehand)\b",
    re.I)


def reply_leaks(messages: list[dict[str, str]], material: TaskMaterial) -> list[Reason]:
    """Deterministic scan of an execution's replies: hidden values typed before any message
    the agent received showed them, and talk about the private guidance."""
    hashes = hidden_hashes(material)
    values = {**expected_values(material.tests, material.public), **produced_values(material)}
    seen = ""
    reasons: list[Reason] = []
    for turn, m in enumerate(messages):
        if m["role"] != "assistant":
            seen += "\n" + m["content"]
            continue
        # The reply protocol's own numbers (command durations) are not values of the task.
        text = re.sub(r'"duration"\s*:\s*[\d.]+|duration="[\d.]*"', "", m["content"])
        hit = GUIDANCE_MENTIONS.search(text)
        if hit:
            reasons.append(Reason(check="private guidance mentioned", item=hit.group(0),
                                  source=f"reply {turn}"))
        low_seen = seen.lower()
        for r in hash_leaks(text, hashes, material.public):
            if r.item.lower() not in low_seen:
                reasons.append(Reason(check=f"{r.check} in a reply", item=r.item,
                                      source=f"reply {turn}: {r.source}, typed before any "
                                             "output showed it"))
        for value, rel in values.items():
            if value in text and value not in seen and contains_value(text, value):
                reasons.append(Reason(check="verifier leakage in a reply", item=value,
                                      source=f"reply {turn}: hidden value ({rel}) typed before "
                                             "any output showed it"))
    return _dedupe(reasons)


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


def contains_value(text: str, value: str) -> bool:
    """`value` occurs in `text` as a whole (not inside a longer word or number)."""
    left = r"(?<![\w.])" if re.match(r"\w", value) else ""
    right = r"(?![\w])" if re.search(r"\w$", value) else ""
    return re.search(left + re.escape(value) + right, text) is not None


def _distinctive(value: str) -> bool:
    """A literal that names an expected result, not vocabulary: it has a digit, is a phrase,
    or has punctuation beyond what command and path names use."""
    return bool(re.search(r"\d", value) or (" " in value.strip() and len(value) >= 10)
                or re.search(r"[^\w\s/.-]", value))


def expected_values(tests: dict[str, str], public: str) -> dict[str, str]:
    """Literals of the test files that the agent cannot see anywhere: value -> test file.

    Format strings and escaped text count by their fixed parts too (the text between
    `{...}` fields, escapes and quotes), so a runbook quoting a test's failure message or a
    line of its expected output is caught without the placeholders."""
    out: dict[str, str] = {}
    for rel, text in tests.items():
        for m in _LITERAL.finditer(text):
            value = next(g for g in m.groups() if g is not None).strip()
            parts = [value] + [p for p in re.split(r"\{[^{}]*\}|\\[ntr0]|['\"]", value)
                               if p != value]
            for part in parts:
                part = part.strip() if part is value else part.strip(" ,.;:!?")
                if part is not value and (len(part.strip()) < 12 or " " not in part.strip()):
                    continue
                if len(part) < 3 or not _distinctive(part) or part.strip() in public:
                    continue
                if re.fullmatch(r"[\W_]+|%\w|\{\w*\}|\\\w", part):
                    continue
                out.setdefault(part, rel)
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
        if contains_value(text, value):
            reasons.append(Reason(check="verifier leakage", item=value,
                                  source=f"expected value found only in hidden test tests/{rel}"))

    # Reworded leakage: parsed commands, hashes in any case or length, produced values.
    reasons += command_leaks(text, material)
    reasons += hash_leaks(text, hidden_hashes(material), material.public)
    for value, rel in produced_values(material).items():
        if contains_value(text, value):
            reasons.append(Reason(check="answer leakage", item=value,
                                  source=f"value the source run produced in {rel}"))

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
