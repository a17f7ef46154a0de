"""The reply protocol of the terminal harnesses: models plus JSON and XML parsers.

A reply is `{"analysis", "plan", "commands": [{"keystrokes", "duration"}], "task_complete"}`.
Parsing never raises: it returns the reply (possibly auto-corrected, with warnings) or an
error message written for the model, which the harness sends back so it can fix its reply.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

MAX_DURATION = 60.0
DEFAULT_DURATION = 1.0

ReplyFormat = Literal["json", "xml"]


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


def parse_reply(text: str, reply_format: ReplyFormat = "json",
                model: type[Reply] = Reply) -> ParseOutcome:
    if reply_format == "xml":
        return parse_xml_reply(text, model)
    return parse_json_reply(text, model)


# ---------------------------------------------------------------- JSON


def parse_json_reply(text: str, model: type[Reply] = Reply) -> ParseOutcome:
    warnings: list[str] = []
    start = text.find("{")
    if start < 0:
        return ParseOutcome(None, "No JSON object found: the reply must be one JSON object "
                                  "with the fields analysis, plan, commands and optionally "
                                  "task_complete.")
    end = text.rfind("}")
    strict = text[start : end + 1] if end > start else ""
    tail = text[start:].rstrip()
    data: Any = None
    fixes: list[str] = []
    error = ""
    used = strict
    # Strict first; then repairs of the whole tail (a reply cut before its last brace), then
    # repairs of the strict span.
    for candidate, repair in ((strict, False), (tail, True), (strict, True)):
        if not candidate:
            continue
        data, fixes, problem = _loads(candidate, repair)
        error = error or problem
        if data is not None:
            used = candidate
            break
    if data is None:
        return ParseOutcome(None, f"The reply is not valid JSON: {error}. Send one JSON object "
                                  "and nothing that breaks it.", warnings)
    if text[:start].strip() or text[start + len(used) :].strip():
        warnings.append("Extra text outside the JSON object was ignored.")
    warnings += [f"Auto-corrected: {fix}." for fix in fixes]
    return _validate(data, model, warnings)


def _loads(candidate: str, repair: bool) -> tuple[Any | None, list[str], str]:
    try:
        return json.loads(candidate), [], ""
    except json.JSONDecodeError as e:
        if not repair:
            return None, [], f"{e.msg} at line {e.lineno} column {e.colno}"
    fixes: list[str] = []
    fixed = candidate
    without_commas = re.sub(r",(\s*[}\]])", r"\1", fixed)
    if without_commas != fixed:
        fixes.append("removed trailing commas")
        fixed = without_commas
    closers = _missing_closers(fixed)
    if closers:
        fixes.append(f"appended missing {' '.join(closers)}")
        fixed = fixed.rstrip().rstrip(",") + "".join(closers)
    if fixes:
        try:
            return json.loads(fixed), fixes, ""
        except json.JSONDecodeError as e:
            return None, [], f"{e.msg} at line {e.lineno} column {e.colno}"
    return None, [], "unparseable JSON"


def _missing_closers(text: str) -> list[str]:
    """Closing brackets needed to balance `text`, ignoring brackets inside strings."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack and stack[-1] == ch:
            stack.pop()
    return list(reversed(stack))


def _validate(data: Any, model: type[Reply], warnings: list[str]) -> ParseOutcome:
    if not isinstance(data, dict):
        return ParseOutcome(None, "The reply must be a JSON object, not "
                                  f"{type(data).__name__}.", warnings)
    known = set(model.model_fields)
    missing = [name for name in ("analysis", "plan", "commands") if name not in data]
    if missing:
        return ParseOutcome(None, f"Missing required field(s): {', '.join(missing)}.", warnings)
    extra = sorted(set(data) - known)
    if extra:
        warnings.append(f"Unknown field(s) ignored: {', '.join(extra)}.")
    commands = data.get("commands")
    if isinstance(commands, list):
        for i, command in enumerate(commands):
            if isinstance(command, dict) and "keystrokes" in command:
                if "duration" not in command:
                    warnings.append(f"commands[{i}] has no duration; using "
                                    f"{DEFAULT_DURATION} s.")
                elif isinstance(command["duration"], int | float) and \
                        command["duration"] > MAX_DURATION:
                    warnings.append(f"commands[{i}].duration capped at {MAX_DURATION:.0f} s.")
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
