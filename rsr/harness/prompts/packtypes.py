"""What a prompt pack is: the keys the Terminus 2 loop fills (with the placeholders each may
use), the `PromptPack` record logs pin by its sha256, and `check_pack`.

The sources of packs (`rsr.harness.prompts.pack` for rsr's own and directories,
`rsr.harness.prompts.harbor` for Harbor's) both build on this module, so neither imports the
other for it.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping
from dataclasses import dataclass, field

from rsr.errors import RsrError

# Long templates: one file each. Placeholders in parentheses.
FILE_KEYS: dict[str, tuple[str, ...]] = {
    "first_json": ("instruction", "terminal_state"),
    "first_xml": ("instruction", "terminal_state"),
    "timeout": ("command", "timeout_sec", "terminal_state"),
    "summary": ("instruction",),
    "questions": ("instruction", "summary", "screen"),
}

# Short messages: one line each in messages.toml.
MESSAGE_KEYS: dict[str, tuple[str, ...]] = {
    # observation framing and caps
    "screen": ("screen",),
    "new_output": ("output",),
    "output_limited": ("head", "max_bytes", "omitted", "tail"),
    # the first prompt: the task's MCP servers, appended to the instruction
    "mcp_servers": (),
    "mcp_stdio": ("name", "command", "args"),
    "mcp_url": ("name", "transport", "url"),
    # the loop
    "confirm_json": ("terminal_state",),
    "confirm_xml": ("terminal_state",),
    "parse_error": ("feedback", "response_type"),
    "response_type_json": (),
    "response_type_xml": (),
    "feedback_error": ("error",),
    "feedback_error_warnings": ("warnings",),
    "feedback_warnings": ("warnings",),
    "warnings": ("feedback", "output"),
    "output_too_long": ("limit",),
    "output_limit_tokens": ("tokens",),
    "output_limit_unknown": (),
    "output_too_long_warnings": ("warnings",),
    # context pressure
    "answers": ("questions",),
    "handoff": ("answers",),
    "short_summary": ("instruction", "screen"),
    "short_handoff": ("instruction", "summary"),
    "bare_handoff": ("instruction", "screen"),
    "fallback_reply": (),
    # JSON parser
    "json_no_json": (),
    "json_no_object": (),
    "json_extra_before": (),
    "json_extra_after": (),
    "json_invalid": ("error",),
    "json_content": ("content",),
    "json_content_preview": ("preview",),
    "json_not_object": (),
    "json_missing_fields": ("fields",),
    "json_analysis_type": (),
    "json_plan_type": (),
    "json_commands_type": (),
    "json_task_complete_type": (),
    "json_field_order": ("found", "expected"),
    "json_command_not_object": ("n",),
    "json_command_no_keystrokes": ("n",),
    "json_keystrokes_type": ("n",),
    "json_bad_duration": ("n",),
    "json_no_duration": ("n",),
    "json_unknown_fields": ("n", "fields"),
    "json_missing_newline": ("n",),
    "auto_corrected": ("fix",),
    "json_fix_brace": (),
    "json_fix_mixed": (),
    # XML parser
    "xml_no_response": (),
    "xml_commands_empty": (),
    "xml_missing_commands": (),
    "xml_extra_before": (),
    "xml_extra_after": (),
    "xml_multiple_responses": ("count",),
    "xml_missing_section": ("name",),
    "xml_unknown_tag": ("name",),
    "xml_multiple_commands": ("count",),
    "xml_multiple_section": ("name",),
    "xml_section_order": ("found", "expected"),
    "xml_bad_duration": ("n", "value"),
    "xml_no_duration": ("n",),
    "xml_missing_newline": ("n",),
    "xml_entity": ("entity", "char"),
    "xml_crlf": (),
    "xml_attr_unquoted": ("n", "name", "value"),
    "xml_attr_single": ("n", "name", "value"),
    "xml_attr_unknown": ("n", "name", "known"),
    "xml_fix_response": (),
}

KEYS: dict[str, tuple[str, ...]] = {**FILE_KEYS, **MESSAGE_KEYS}


class PromptPackError(RsrError):
    """A prompt pack is missing a key or uses a placeholder the loop does not fill."""


@dataclass(frozen=True)
class PromptPack:
    name: str
    """`rsr`, `harbor` or the directory given."""
    texts: Mapping[str, str]
    source: str
    """Where the texts came from (a package version, a path)."""
    version: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)
    """Keys beyond `KEYS` that a pack may carry (e.g. other harnesses' words)."""

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for key in sorted(self.texts):
            digest.update(key.encode() + b"\0" + self.texts[key].encode() + b"\0")
        return digest.hexdigest()

    def render(self, key: str, **values: object) -> str:
        return self.texts[key].format(**values)

    def describe(self) -> dict[str, str]:
        """What logs record about the pack."""
        return {"prompt_pack": self.name, "prompt_pack_version": self.version,
                "prompt_pack_sha256": self.sha256, "prompt_pack_source": self.source}


def check_pack(texts: Mapping[str, str], where: str) -> None:
    """Every key present, every placeholder one the loop fills (else: which file and key)."""
    missing = [key for key in KEYS if key not in texts]
    if missing:
        raise PromptPackError(f"prompt pack {where} lacks {', '.join(missing)}")
    for key, allowed in KEYS.items():
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(texts[key]) if name}
        except ValueError as e:
            raise PromptPackError(f"prompt pack {where}, {key}: {e} (write literal braces "
                                  "as {{ and }})") from e
        unknown = sorted(names - set(allowed))
        if unknown:
            raise PromptPackError(
                f"prompt pack {where}, {key}: unknown placeholder(s) {', '.join(unknown)}; "
                f"available: {', '.join(allowed) or '(none)'}")
