"""Prompt templates of the terminal harnesses, one file per prompt, versioned in the file name.

Templates use `string.Template` placeholders (`$name`) so that JSON examples need no escaping.
`PROMPT_VERSION` and `prompt_digest()` are recorded in every log.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.resources import files
from string import Template

PROMPT_VERSION = "v1"

FIRST = "terminus2_first"
FORMAT_JSON = "format_json"
FORMAT_XML = "format_xml"
CONFIRM = "confirm"
PARSE_ERROR = "parse_error"
PARSE_WARNING = "parse_warning"
SUMMARY = "summary"
QUESTIONS = "questions"
ANSWERS = "answers"
HANDOFF = "handoff"
REFLECTION = "reflection"
STATEM = "statem"
STATEM_DISPLAY = "statem_display"

ALL = (FIRST, FORMAT_JSON, FORMAT_XML, CONFIRM, PARSE_ERROR, PARSE_WARNING, SUMMARY, QUESTIONS,
       ANSWERS, HANDOFF, REFLECTION, STATEM, STATEM_DISPLAY)


@cache
def load(name: str, version: str = PROMPT_VERSION) -> str:
    return files(__name__).joinpath(f"{name}.{version}.md").read_text(encoding="utf-8")


def render(name: str, version: str = PROMPT_VERSION, **values: object) -> str:
    """Fill a template; a missing value is a KeyError naming the placeholder."""
    return Template(load(name, version)).substitute({k: str(v) for k, v in values.items()})


@cache
def prompt_digest(version: str = PROMPT_VERSION) -> str:
    """sha256 over every template of a version, so a log pins the exact wording used."""
    digest = hashlib.sha256()
    for name in ALL:
        digest.update(name.encode() + b"\0" + load(name, version).encode() + b"\0")
    return digest.hexdigest()
