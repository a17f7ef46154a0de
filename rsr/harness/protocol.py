"""The reply protocol of the terminal harnesses: models plus JSON and XML parsers.

A reply is `{"analysis", "plan", "commands": [{"keystrokes", "duration"}], "task_complete"}`.
Parsing never raises: it returns the reply (possibly auto-corrected, with warnings) or an
error message written for the model, which the harness sends back so it can fix its reply.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

if TYPE_CHECKING:
    from rsr.harness.prompts.pack import PromptPack

MAX_DURATION = 60.0
DEFAULT_DURATION = 1.0

ReplyFormat = Literal["json", "xml"]
REQUIRED = ("analysis", "plan", "commands")


class Command(BaseModel):
    model_config = ConfigDict(extra="ignore")

    keystrokes: str
    duration: float = DEFAULT_DURATION

    @field_validator("duration")
    @classmethod
    def _clamp(cls, value: float) -> float:
        return min(max(value, 0.0), MAX_DURATION)


class Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    analysis: str
    plan: str
    commands: list[Command]
    task_complete: bool = False


class StateMReply(Reply):
    """StateM adds the transition the model asks for (absent = stay in the current state)."""

    next_state: str | None = None


@dataclass
class ParseOutcome:
    reply: Reply | None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)


def parse_reply_result(text: str, reply_format: ReplyFormat, words: PromptPack) -> ParseResult:
    """The loop's parser: the reference's rules, the pack's words."""
    if reply_format == "xml":
        return parse_xml(text, words)
    return parse_json(text, words)


def parse_reply(text: str, reply_format: ReplyFormat = "json",
                model: type[Reply] = Reply) -> ParseOutcome:
    if reply_format == "xml":
        return parse_xml_reply(text, model)
    return parse_json_reply(text, model)


# ---------------------------------------------------------------- JSON


@dataclass
class ParseResult:
    """A reply as the loop sees it (the shape of Harbor's parser result).

    `error` non-empty: nothing runs and the model is told. `warning` is the bullet list
    (`- a\n- b`) shown with the next observation. `data` is the parsed object, for harness
    fields beyond the protocol (StateM's `next_state`).
    """

    commands: list[Command]
    task_complete: bool
    error: str = ""
    warning: str = ""
    analysis: Any = ""
    plan: Any = ""
    data: dict[str, Any] = field(default_factory=dict)
    error_kind: str = ""


def _bullets(warnings: list[str]) -> str:
    return "- " + "\n- ".join(warnings) if warnings else ""


def parse_json(text: str, words: PromptPack) -> ParseResult:
    """Harbor's JSON rules: the first balanced object is the reply; repairs are limited to
    appending closing braces or picking a flat object out of the text, so a reply cut off
    inside its command list never parses (nothing of it runs)."""
    result = _json_attempt(text, words)
    if not result.error:
        return result
    for fix_key, fix in (("json_fix_brace", _fix_braces), ("json_fix_mixed", _fix_mixed)):
        fixed = fix(text, result.error_kind)
        if fixed is None:
            continue
        repaired = _json_attempt(fixed, words)
        if not repaired.error:
            note = words.render("auto_corrected", fix=words.render(fix_key))
            repaired.warning = f"- {note}\n{repaired.warning}" if repaired.warning \
                else f"- {note}"
            return repaired
    return result


def _first_object(text: str) -> tuple[int, int]:
    """Span of the first balanced {...}, with string and backslash rules as Harbor counts them
    (a backslash escapes the next character even outside strings)."""
    start = -1
    depth = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
            continue
        if ch == '"':
            in_string = not in_string
            continue
        if in_string:
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start != -1:
                return start, i + 1
    return -1, -1


def _json_attempt(text: str, words: PromptPack) -> ParseResult:
    warnings: list[str] = []
    start, end = _first_object(text)
    if start == -1 or end == -1:
        return ParseResult([], False, words.render("json_no_json"),
                           _bullets([words.render("json_no_object")]), error_kind="no_json")
    if text[:start].strip():
        warnings.append(words.render("json_extra_before"))
    if text[end:].strip():
        warnings.append(words.render("json_extra_after"))
    content = text[start:end]
    try:
        data = json.loads(content)
    except json.JSONDecodeError as e:
        error = words.render("json_invalid", error=str(e))
        error += (words.render("json_content", content=repr(content)) if len(content) < 200
                  else words.render("json_content_preview", preview=repr(content[:100])))
        return ParseResult([], False, error, _bullets(warnings), error_kind="invalid_json")
    problem = _json_structure(data, content, warnings, words)
    if problem:
        return ParseResult([], False, problem, _bullets(warnings), error_kind="structure")
    complete = data.get("task_complete", False)
    if isinstance(complete, str):
        complete = complete.lower() in ("true", "1", "yes")
    analysis, plan = data.get("analysis", ""), data.get("plan", "")
    commands, problem = _json_commands(data.get("commands", []), warnings, words)
    if problem:
        if complete:  # a finished task does not need its commands: they become a warning
            warnings.append(problem)
            return ParseResult([], True, "", _bullets(warnings), analysis, plan, data)
        return ParseResult([], False, problem, _bullets(warnings), analysis, plan, data,
                           error_kind="commands")
    return ParseResult(commands, bool(complete), "", _bullets(warnings), analysis, plan, data)


def _json_structure(data: Any, content: str, warnings: list[str], words: PromptPack) -> str:
    if not isinstance(data, dict):
        return words.render("json_not_object")
    missing = [name for name in REQUIRED if name not in data]
    if missing:
        return words.render("json_missing_fields", fields=", ".join(missing))
    if not isinstance(data.get("analysis", ""), str):
        warnings.append(words.render("json_analysis_type"))
    if not isinstance(data.get("plan", ""), str):
        warnings.append(words.render("json_plan_type"))
    if not isinstance(data.get("commands", []), list):
        return words.render("json_commands_type")
    positions = {}
    for name in REQUIRED:
        match = re.search(f'"({name})"\\s*:', content)
        if match:
            positions[name] = match.start()
    if len(positions) >= 2:
        expected = [name for name in REQUIRED if name in positions]
        found = sorted(expected, key=positions.__getitem__)
        if found != expected:
            warnings.append(words.render("json_field_order", found=" → ".join(found),
                                         expected=" → ".join(expected)))
    complete = data.get("task_complete")
    if complete is not None and not isinstance(complete, bool | str):
        warnings.append(words.render("json_task_complete_type"))
    return ""


def _json_commands(items: list[Any], warnings: list[str],
                   words: PromptPack) -> tuple[list[Command], str]:
    commands: list[Command] = []
    for i, item in enumerate(items):
        n = i + 1
        if not isinstance(item, dict):
            return [], words.render("json_command_not_object", n=n)
        if "keystrokes" not in item:
            return [], words.render("json_command_no_keystrokes", n=n)
        keystrokes = item["keystrokes"]
        if not isinstance(keystrokes, str):
            return [], words.render("json_keystrokes_type", n=n)
        if "duration" in item:
            duration = item["duration"]
            if not isinstance(duration, int | float):  # bools count as numbers, as in Harbor
                warnings.append(words.render("json_bad_duration", n=n))
                duration = DEFAULT_DURATION
        else:
            warnings.append(words.render("json_no_duration", n=n))
            duration = DEFAULT_DURATION
        unknown = set(item) - {"keystrokes", "duration"}
        if unknown:
            warnings.append(words.render("json_unknown_fields", n=n, fields=", ".join(unknown)))
        if i < len(items) - 1 and keystrokes and not keystrokes.endswith("\n"):
            warnings.append(words.render("json_missing_newline", n=n))
        commands.append(Command(keystrokes=keystrokes, duration=float(duration)))
    return commands, ""


def _fix_braces(text: str, error_kind: str) -> str | None:
    # Braces are counted naively (inside strings too), as the reference does.
    if error_kind not in ("invalid_json", "no_json"):
        return None
    missing = text.count("{") - text.count("}")
    return text + "}" * missing if missing > 0 else None


_FLAT_OBJECT = re.compile(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}", re.S)


def _fix_mixed(text: str, error_kind: str) -> str | None:
    for match in _FLAT_OBJECT.findall(text):
        try:
            json.loads(match)
        except json.JSONDecodeError:
            continue
        return match
    return None


def parse_json_reply(text: str, model: type[Reply] = Reply) -> ParseOutcome:
    """`parse_json` with rsr's wording, as a validated `Reply` (for the factory and exports)."""
    from rsr.harness.prompts.pack import prompt_pack

    result = parse_json(text, prompt_pack("rsr"))
    warnings = [w.removeprefix("- ") for w in result.warning.split("\n") if w]
    if result.error:
        return ParseOutcome(None, result.error, warnings)
    data = {**result.data, "analysis": str(result.analysis), "plan": str(result.plan),
            "commands": result.commands, "task_complete": result.task_complete}
    return _validate(data, model, warnings)


def _validate(data: Any, model: type[Reply], warnings: list[str]) -> ParseOutcome:
    if not isinstance(data, dict):
        return ParseOutcome(None, "The reply must be an object.", warnings)
    missing = [name for name in REQUIRED if name not in data]
    if missing:
        return ParseOutcome(None, f"Missing required field(s): {', '.join(missing)}.", warnings)
    try:
        reply = model.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'reply'}: {err['msg']}"
            for err in e.errors()
        )
        return ParseOutcome(None, f"Invalid field(s): {problems}.", warnings)
    return ParseOutcome(reply, None, warnings)


# ---------------------------------------------------------------- XML

_TAG = r"<{name}>(.*?)</{name}>"
_KEYSTROKES = re.compile(r"<keystrokes(?P<attrs>[^>]*)>(?P<body>.*?)</keystrokes>", re.S)
_DURATION = re.compile(r"""duration\s*=\s*["']([^"']*)["']""")


def parse_xml_reply(text: str, model: type[Reply] = Reply) -> ParseOutcome:
    """Parse `<response>...</response>`; element contents are taken verbatim (no entities)."""
    warnings: list[str] = []
    start, end = text.find("<response>"), text.rfind("</response>")
    if start < 0:
        return ParseOutcome(None, "No <response> element found: wrap the reply in "
                                  "<response>...</response>.")
    if end < 0:
        warnings.append("Auto-corrected: added the missing </response>.")
        body = text[start + len("<response>") :]
    else:
        body = text[start + len("<response>") : end]
        if text[end + len("</response>") :].strip():
            warnings.append("Extra text after </response> was ignored.")
    if text[:start].strip():
        warnings.append("Extra text before <response> was ignored.")

    data: dict[str, Any] = {}
    for name in ("analysis", "plan"):
        match = re.search(_TAG.format(name=name), body, re.S)
        if match:
            data[name] = match.group(1).strip()
    commands_match = re.search(r"<commands>(.*?)</commands>", body, re.S)
    if commands_match is None and re.search(r"<commands\s*/>", body):
        data["commands"] = []
    elif commands_match is not None:
        commands = []
        for i, ks in enumerate(_KEYSTROKES.finditer(commands_match.group(1))):
            duration_match = _DURATION.search(ks.group("attrs"))
            command: dict[str, Any] = {"keystrokes": ks.group("body")}
            if duration_match:
                try:
                    command["duration"] = float(duration_match.group(1))
                except ValueError:
                    return ParseOutcome(None, f"commands[{i}]: duration "
                                              f"{duration_match.group(1)!r} is not a number.",
                                        warnings)
            commands.append(command)
        data["commands"] = commands
    complete = re.search(_TAG.format(name="task_complete"), body, re.S)
    if complete:
        value = complete.group(1).strip().lower()
        if value not in ("true", "false"):
            return ParseOutcome(None, "<task_complete> must be true or false.", warnings)
        data["task_complete"] = value == "true"
    for name in set(model.model_fields) - {"analysis", "plan", "commands", "task_complete"}:
        match = re.search(_TAG.format(name=name), body, re.S)
        if match:
            data[name] = match.group(1).strip()
    return _validate(data, model, warnings)


def parse_xml(text: str, words: PromptPack) -> ParseResult:
    outcome = parse_xml_reply(text)
    warning = _bullets(outcome.warnings)
    if outcome.reply is None:
        return ParseResult([], False, outcome.error or "", warning, error_kind="xml")
    reply = outcome.reply
    return ParseResult(list(reply.commands), reply.task_complete, "", warning, reply.analysis,
                       reply.plan, reply.model_dump())
