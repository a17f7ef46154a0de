"""The reply protocol of the terminal harnesses: models plus JSON and XML parsers.

A reply is `{"analysis", "plan", "commands": [{"keystrokes", "duration"}], "task_complete"}`.
Parsing never raises: it returns the reply (possibly auto-corrected, with warnings) or an
error message written for the model, which the harness sends back so it can fix its reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
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


def parse_reply_result(text: str, reply_format: ReplyFormat, words: PromptPack,
                       extra_tags: tuple[str, ...] = ()) -> ParseResult:
    """The loop's parser: the reference's rules, the pack's words."""
    if reply_format == "xml":
        return parse_xml(text, words, extra_tags)
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
    _order_warning(content, lambda name: f'"({name})"\\s*:', "json_field_order", words, warnings)
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
        # The reference joins a set here (its order varies between runs); rsr keeps the
        # order the fields were written in, so the same reply always gets the same warning.
        unknown = [name for name in item if name not in ("keystrokes", "duration")]
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

_XML_SECTIONS = ("analysis", "plan", "commands", "task_complete")
_KEYSTROKES = re.compile(r"<keystrokes([^>]*)>(.*?)</keystrokes>", re.S)
_DURATION = re.compile(r"""duration\s*=\s*["']([^"']*)["']""")
_ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&apos;": "'"}


def parse_xml(text: str, words: PromptPack, extra_tags: tuple[str, ...] = ()) -> ParseResult:
    """Harbor's XML rules: keystrokes verbatim (entities are warned about, never decoded),
    missing sections are warnings except <commands>, an empty or self-closing
    <task_complete> is false, only the first <response> counts."""
    warnings: list[str] = []
    start, end = text.find("<response>"), text.find("</response>")
    if start != -1:
        if text[:start].strip():
            warnings.append(words.render("xml_extra_before"))
        if end != -1 and text[end + len("</response>"):].strip():
            warnings.append(words.render("xml_extra_after"))
            count = text.count("<response>")
            if count > 1:
                warnings.append(words.render("xml_multiple_responses", count=count))
    if start == -1:
        return ParseResult([], False, words.render("xml_no_response"), _bullets(warnings),
                           error_kind="no_response")
    close = text.find("</response>", start)
    body = (text[start + len("<response>"):] if close == -1
            else text[start + len("<response>"):close]).strip()
    complete = re.search(r"<task_complete>\s*true\s*</task_complete>", body, re.I) is not None
    sections = _xml_sections(body, warnings, words)
    data: dict[str, Any] = {}
    for tag in extra_tags:  # harness fields (StateM's next_state); Harbor warns about them
        match = re.search(f"<{tag}>(.*?)</{tag}>", body, re.S)
        if match:
            data[tag] = match.group(1).strip()
    analysis, plan = sections.get("analysis", ""), sections.get("plan", "")
    commands_text = sections.get("commands", "")
    if not commands_text:
        if "commands" in sections:
            if not complete:
                warnings.append(words.render("xml_commands_empty"))
            return ParseResult([], complete, "", _bullets(warnings), analysis, plan, data)
        if complete:
            return ParseResult([], True, "", _bullets(warnings), analysis, plan, data)
        return ParseResult([], False, words.render("xml_missing_commands"), _bullets(warnings),
                           analysis, plan, data, error_kind="no_commands")
    commands = _xml_commands(commands_text, warnings, words)
    return ParseResult(commands, complete, "", _bullets(warnings), analysis, plan, data)


def _xml_sections(body: str, warnings: list[str], words: PromptPack) -> dict[str, str]:
    sections: dict[str, str] = {}
    for name in _XML_SECTIONS:
        match = re.search(f"<{name}>(.*?)</{name}>", body, re.S)
        if match:
            sections[name] = match.group(1).strip()
        elif re.search(f"<{name}\\s*/>", body) or f"<{name}></{name}>" in body:
            sections[name] = ""
    # Harbor walks a set here, so with several missing its order varies; ours is fixed.
    for name in REQUIRED:
        if name not in sections:
            warnings.append(words.render("xml_missing_section", name=name))
    for tag in sorted(set(_top_level_tags(body)) - set(_XML_SECTIONS)):
        warnings.append(words.render("xml_unknown_tag", name=tag))
    for name in _XML_SECTIONS:
        count = len(re.findall(f"<{name}(?:\\s|>|/>)", body))
        if count > 1:
            warnings.append(words.render("xml_multiple_commands", count=count)
                            if name == "commands" else
                            words.render("xml_multiple_section", name=name))
    _order_warning(body, lambda name: f"<{name}(?:\\s|>|/>)", "xml_section_order", words, warnings)
    return sections


def _top_level_tags(body: str) -> list[str]:
    tags: list[str] = []
    depth = i = 0
    while i < len(body):
        if body[i] != "<":
            i += 1
            continue
        close = body.find(">", i)
        if close == -1:
            break
        inner = body[i + 1:close]
        i = close + 1
        if inner.startswith(("!", "?")):
            continue
        if inner.startswith("/"):
            depth -= 1
            continue
        name = inner.split()[0] if " " in inner else inner
        if depth == 0:
            tags.append(name.removesuffix("/"))
        if not inner.endswith("/"):
            depth += 1
    return tags


def _xml_commands(text: str, warnings: list[str], words: PromptPack) -> list[Command]:
    commands: list[Command] = []
    found = _KEYSTROKES.findall(text)
    for i, (attrs, keystrokes) in enumerate(found):
        n = i + 1
        for name, value in re.findall(r'(\w+)\s*=\s*([^"\'\s>]+)', attrs):
            warnings.append(words.render("xml_attr_unquoted", n=n, name=name, value=value))
        for name, value in re.findall(r"(\w+)\s*=\s*'([^']*)'", attrs):
            warnings.append(words.render("xml_attr_single", n=n, name=name, value=value))
        for name in re.findall(r"(\w+)\s*=", attrs):
            if name != "duration":
                warnings.append(words.render("xml_attr_unknown", n=n, name=name,
                                             known="duration"))
        duration = DEFAULT_DURATION
        match = _DURATION.search(attrs)
        if match:
            try:
                duration = float(match.group(1))
            except ValueError:
                warnings.append(words.render("xml_bad_duration", n=n, value=match.group(1)))
        else:
            warnings.append(words.render("xml_no_duration", n=n))
        if i < len(found) - 1 and not keystrokes.endswith("\n"):
            warnings.append(words.render("xml_missing_newline", n=n))
        commands.append(Command(keystrokes=keystrokes, duration=duration))
    for entity, char in _ENTITIES.items():
        if entity in text:
            warnings.append(words.render("xml_entity", entity=entity, char=char))
    if "\\r\\n" in text:
        warnings.append(words.render("xml_crlf"))
    return commands


def salvage_xml(truncated: str, words: PromptPack) -> str | None:
    """A reply cut off after a complete </commands> ... </response> is used up to there."""
    commands_end = truncated.find("</commands>")
    end = truncated.find("</response>", commands_end) if commands_end != -1 else -1
    if end == -1:
        return None
    clean = truncated[: end + len("</response>")]
    result = parse_xml(clean, words)
    multiple = any(k in result.warning for k in (
        words.render("xml_multiple_responses", count="")[:20],
        words.render("xml_multiple_commands", count="")[:20]))
    return clean if not result.error and not multiple else None


def parse_xml_reply(text: str, model: type[Reply] = Reply) -> ParseOutcome:
    """`parse_xml` with rsr's wording, as a validated `Reply` (for the factory and exports)."""
    from rsr.harness.prompts.pack import prompt_pack

    extra = tuple(set(model.model_fields) - set(_XML_SECTIONS))
    result = parse_xml(text, prompt_pack("rsr"), extra)
    warnings = [w.removeprefix("- ") for w in result.warning.split("\n") if w]
    if result.error:
        return ParseOutcome(None, result.error, warnings)
    data = {**result.data, "analysis": str(result.analysis), "plan": str(result.plan),
            "commands": result.commands, "task_complete": result.task_complete}
    return _validate(data, model, warnings)


def _order_warning(text: str, pattern: Callable[[str], str], key: str, words: PromptPack,
                   warnings: list[str]) -> None:
    """The reference's warning when the required fields appear out of order."""
    positions = {}
    for name in REQUIRED:
        match = re.search(pattern(name), text)
        if match:
            positions[name] = match.start()
    if len(positions) >= 2:
        expected = [name for name in REQUIRED if name in positions]
        found = sorted(expected, key=positions.__getitem__)
        if found != expected:
            warnings.append(words.render(key, found=" → ".join(found), expected=" → ".join(expected)))
