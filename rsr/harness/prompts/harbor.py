"""The `harbor` prompt pack: Terminus 2's wording read at run time from an installed Harbor.

Nothing of Harbor's text is in this repository. The pack is assembled when asked for: the
template files of `harbor/agents/terminus_2/templates/` are read as they are, and the
messages Harbor writes inline in its Python source are taken from that source's syntax tree
(`ast`, never imported or executed): each pack key names a function and the position of a
string literal in it (`LOCATORS`), and the literal's interpolations are renamed to the
pack's placeholder names. A Harbor version whose code moved the text fails loudly, naming
the key, instead of yielding different words.

The installation is found without importing it: `RSR_HARBOR_TEMPLATES` (the `templates`
directory itself), else `harbor/agents/terminus_2` under the site-packages of
`RSR_HARBOR_PYTHON`'s venv, of `.cache/hvenv` of the working directory, or of this
interpreter's own `sys.path`.
"""

from __future__ import annotations

import ast
import glob
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from rsr.errors import RsrError
from rsr.harness.prompts.packtypes import PromptPack, check_pack

AGENT_DIR = Path("harbor") / "agents" / "terminus_2"


class HarborPackError(RsrError):
    """Harbor's Terminus 2 sources could not be found or no longer match the locators."""


@dataclass(frozen=True)
class Placeholder:
    source: str
    """The interpolated expression as written in Harbor's source (`ast.unparse`)."""


Part = str | Placeholder


def _candidate_roots() -> list[Path]:
    roots: list[Path] = []
    python = os.environ.get("RSR_HARBOR_PYTHON")
    venvs = [Path(python).absolute().parent.parent] if python else []  # a venv: not resolved
    venvs.append(Path.cwd() / ".cache" / "hvenv")
    for venv in venvs:
        roots += [Path(p) for p in sorted(glob.glob(str(venv / "lib" / "python3*" /
                                                          "site-packages")))]
    roots += [Path(p) for p in sys.path if p and p.endswith("site-packages")]
    return roots


def find_agent_dir() -> Path:
    """Harbor's `terminus_2` package directory (holding `templates/` and the agent source)."""
    override = os.environ.get("RSR_HARBOR_TEMPLATES")
    if override:
        templates = Path(override)
        if not templates.is_dir():
            raise HarborPackError(f"RSR_HARBOR_TEMPLATES={override} is not a directory")
        return templates.parent
    for root in _candidate_roots():
        candidate = root / AGENT_DIR
        if (candidate / "templates").is_dir():
            return candidate
    raise HarborPackError(
        "prompts=harbor needs an installed Harbor (harbor==0.26.*): none was found. Install it "
        "in a Python 3.12 venv (`python3.12 -m venv .cache/hvenv && .cache/hvenv/bin/pip "
        "install harbor==0.26.0`), or point RSR_HARBOR_PYTHON at that venv's python, or "
        "RSR_HARBOR_TEMPLATES at its harbor/agents/terminus_2/templates directory.")


# ---------------------------------------------------------------- string literals of a source


def _parts(node: ast.expr) -> list[Part] | None:
    """A string-valued expression as literal text and placeholders; None if it is not one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        parts: list[Part] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append(Placeholder(ast.unparse(value.value)))
        return parts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts(node.left), _parts(node.right)
        if left is None and right is None:
            return None
        return ((left if left is not None else [Placeholder(ast.unparse(node.left))])
                + (right if right is not None else [Placeholder(ast.unparse(node.right))]))
    return None


def _function(tree: ast.Module, qualname: str) -> ast.AST:
    scope: ast.AST = tree
    for name in qualname.split("."):
        found = next((n for n in ast.iter_child_nodes(scope)
                      if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                      and n.name == name), None)
        if found is None:
            raise KeyError(qualname)
        scope = found
    return scope


def literals(source: str, qualname: str) -> list[list[Part]]:
    """The string literals of one function, outermost expressions only, in source order.

    A docstring is not counted; adjacent literals and `+` chains count as one.
    """
    func = _function(ast.parse(source), qualname)
    body = getattr(func, "body", [])
    docstring = body[0].value if body and isinstance(body[0], ast.Expr) and \
        isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str) \
        else None
    found: list[tuple[int, int, list[Part]]] = []
    inside: set[int] = set()
    for node in ast.walk(func):
        if id(node) in inside or node is docstring or not isinstance(node, ast.expr):
            continue
        parts = _parts(node)
        if parts is None:
            continue
        found.append((node.lineno, node.col_offset, parts))
        inside.update(id(n) for n in ast.walk(node))
    return [parts for _, _, parts in sorted(found, key=lambda f: (f[0], f[1]))]


# ---------------------------------------------------------------- the pack


@dataclass(frozen=True)
class Locator:
    file: str
    function: str
    index: int
    """Position among the function's string literals (`literals`)."""
    names: tuple[tuple[str, str], ...] = ()
    """Harbor's interpolated expression -> the pack's placeholder name."""


_T2 = "terminus_2.py"
_TS = "tmux_session.py"
_JP = "terminus_json_plain_parser.py"
_XP = "terminus_xml_plain_parser.py"
_JOIN = "', '.join"
_X = "TerminusXMLPlainParser."

TEMPLATE_FILES = {"first_json": "terminus-json-plain.txt", "first_xml": "terminus-xml-plain.txt",
                  "timeout": "timeout.txt"}

LOCATORS: dict[str, Locator] = {
    "screen": Locator(_TS, "TmuxSession.get_incremental_output", 0,
                      (("visible_screen", "screen"),)),
    "new_output": Locator(_TS, "TmuxSession.get_incremental_output", 1,
                          (("new_content", "output"),)),
    "output_limited": Locator(_T2, "Terminus2._limit_output_length", 8, (
        ("first_portion", "head"), ("max_bytes", "max_bytes"),
        ("omitted_bytes", "omitted"), ("last_portion", "tail"))),
    "mcp_servers": Locator(_T2, "Terminus2.run", 1),
    "mcp_stdio": Locator(_T2, "Terminus2.run", 4, (
        ("s.name", "name"), ("s.command", "command"), ("args_str", "args"))),
    "mcp_url": Locator(_T2, "Terminus2.run", 5, (
        ("s.name", "name"), ("s.transport", "transport"), ("s.url", "url"))),
    "confirm_json": Locator(_T2, "Terminus2._get_completion_confirmation_message", 1,
                            (("terminal_output", "terminal_state"),)),
    "confirm_xml": Locator(_T2, "Terminus2._get_completion_confirmation_message", 3,
                           (("terminal_output", "terminal_state"),)),
    "parse_error": Locator(_T2, "Terminus2._run_agent_loop", 19, (
        ("feedback", "feedback"), ("self._get_error_response_type()", "response_type"))),
    "response_type_json": Locator(_T2, "Terminus2._get_error_response_type", 1),
    "response_type_xml": Locator(_T2, "Terminus2._get_error_response_type", 3),
    "feedback_error": Locator(_T2, "Terminus2._handle_llm_interaction", 2,
                              (("result.error", "error"),)),
    "feedback_error_warnings": Locator(_T2, "Terminus2._handle_llm_interaction", 3,
                                       (("result.warning", "warnings"),)),
    "feedback_warnings": Locator(_T2, "Terminus2._handle_llm_interaction", 4,
                                 (("result.warning", "warnings"),)),
    "warnings": Locator(_T2, "Terminus2._run_agent_loop", 22, (
        ("feedback", "feedback"), ("self._limit_output_length(terminal_output)", "output"))),
    "output_too_long": Locator(_T2, "Terminus2._query_llm", 28, (("limit_str", "limit"),)),
    "output_limit_tokens": Locator(_T2, "Terminus2._query_llm", 26,
                                   (("output_limit", "tokens"),)),
    "output_limit_unknown": Locator(_T2, "Terminus2._query_llm", 27),
    "output_too_long_warnings": Locator(_T2, "Terminus2._query_llm", 24,
                                        (("parse_result.warning", "warnings"),)),
    "summary": Locator(_T2, "Terminus2._summarize", 1,
                       (("original_instruction", "instruction"),)),
    "questions": Locator(_T2, "Terminus2._summarize", 7, (
        ("original_instruction", "instruction"), ("summary_response.content", "summary"),
        ("current_screen", "screen"))),
    "answers": Locator(_T2, "Terminus2._summarize", 17, (("model_questions", "questions"),)),
    "handoff": Locator(_T2, "Terminus2._summarize", 34,
                       (("answers_response.content", "answers"),)),
    "short_summary": Locator(_T2, "Terminus2._query_llm", 9, (
        ("original_instruction", "instruction"), ("limited_screen", "screen"))),
    "short_handoff": Locator(_T2, "Terminus2._query_llm", 10, (
        ("original_instruction", "instruction"), ("short_llm_response.content", "summary"))),
    "bare_handoff": Locator(_T2, "Terminus2._query_llm", 15, (
        ("original_instruction", "instruction"), ("limited_screen", "screen"))),
    "fallback_reply": Locator(_T2, "Terminus2._query_llm", 17),
    "json_no_json": Locator(_JP, "TerminusJSONPlainParser._try_parse_response", 0),
    "json_no_object": Locator(_JP, "TerminusJSONPlainParser._extract_json_content", 5),
    "json_extra_before": Locator(_JP, "TerminusJSONPlainParser._extract_json_content", 6),
    "json_extra_after": Locator(_JP, "TerminusJSONPlainParser._extract_json_content", 7),
    "json_invalid": Locator(_JP, "TerminusJSONPlainParser._try_parse_response", 5,
                            (("str(e)", "error"),)),
    "json_content": Locator(_JP, "TerminusJSONPlainParser._try_parse_response", 6,
                            (("repr(json_content)", "content"),)),
    "json_content_preview": Locator(_JP, "TerminusJSONPlainParser._try_parse_response", 7,
                                    (("repr(json_content[:100])", "preview"),)),
    "json_not_object": Locator(_JP, "TerminusJSONPlainParser._validate_json_structure", 0),
    "json_missing_fields": Locator(_JP, "TerminusJSONPlainParser._validate_json_structure", 1,
                                   ((f"{_JOIN}(missing_fields)", "fields"),)),
    "json_analysis_type": Locator(_JP, "TerminusJSONPlainParser._validate_json_structure", 4),
    "json_plan_type": Locator(_JP, "TerminusJSONPlainParser._validate_json_structure", 7),
    "json_commands_type": Locator(_JP, "TerminusJSONPlainParser._validate_json_structure", 9),
    "json_task_complete_type": Locator(_JP, "TerminusJSONPlainParser._validate_json_structure",
                                       11),
    "json_field_order": Locator(_JP, "TerminusJSONPlainParser._check_field_order", 6, (
        ("actual_str", "found"), ("expected_str", "expected"))),
    "json_command_not_object": Locator(_JP, "TerminusJSONPlainParser._parse_commands", 0,
                                       (("i + 1", "n"),)),
    "json_command_no_keystrokes": Locator(_JP, "TerminusJSONPlainParser._parse_commands", 2,
                                          (("i + 1", "n"),)),
    "json_keystrokes_type": Locator(_JP, "TerminusJSONPlainParser._parse_commands", 4,
                                    (("i + 1", "n"),)),
    "json_bad_duration": Locator(_JP, "TerminusJSONPlainParser._parse_commands", 7,
                                 (("i + 1", "n"),)),
    "json_no_duration": Locator(_JP, "TerminusJSONPlainParser._parse_commands", 8,
                                (("i + 1", "n"),)),
    "json_unknown_fields": Locator(_JP, "TerminusJSONPlainParser._parse_commands", 11, (
        ("i + 1", "n"), (f"{_JOIN}(unknown_fields)", "fields"))),
    "json_missing_newline": Locator(_JP, "TerminusJSONPlainParser._parse_commands", 13,
                                    (("i + 1", "n"),)),
    "auto_corrected": Locator(_JP, "TerminusJSONPlainParser.parse_response", 1,
                              (("fix_name", "fix"),)),
    "json_fix_brace": Locator(_JP, "TerminusJSONPlainParser._get_auto_fixes", 0),
    "json_fix_mixed": Locator(_JP, "TerminusJSONPlainParser._get_auto_fixes", 1),
    "xml_no_response": Locator(_XP, _X + "_try_parse_response", 0),
    "xml_commands_empty": Locator(_XP, _X + "_try_parse_response", 12),
    "xml_missing_commands": Locator(_XP, _X + "_try_parse_response", 19),
    "xml_fix_response": Locator(_XP, _X + "_get_auto_fixes", 0),
    "xml_extra_before": Locator(_XP, _X + "_check_extra_text", 2),
    "xml_extra_after": Locator(_XP, _X + "_check_extra_text", 4),
    "xml_multiple_responses": Locator(_XP, _X + "_check_extra_text", 6,
                                      (("total_response_count", "count"),)),
    "xml_missing_section": Locator(_XP, _X + "_extract_sections", 19, (("section", "name"),)),
    "xml_unknown_tag": Locator(_XP, _X + "_extract_sections", 21, (("tag", "name"),)),
    "xml_multiple_commands": Locator(_XP, _X + "_extract_sections", 25,
                                     (("tag_count", "count"),)),
    "xml_multiple_section": Locator(_XP, _X + "_extract_sections", 26,
                                    (("section_name", "name"),)),
    "xml_section_order": Locator(_XP, _X + "_check_section_order", 9, (
        ("actual_str", "found"), ("expected_str", "expected"))),
    "xml_bad_duration": Locator(_XP, _X + "_parse_xml_commands", 2, (
        ("i + 1", "n"), ("duration_match.group(1)", "value"))),
    "xml_no_duration": Locator(_XP, _X + "_parse_xml_commands", 3, (("i + 1", "n"),)),
    "xml_missing_newline": Locator(_XP, _X + "_parse_xml_commands", 5, (("i + 1", "n"),)),
    "xml_entity": Locator(_XP, _X + "_parse_xml_commands", 16, (
        ("entity", "entity"), ("char", "char"))),
    "xml_crlf": Locator(_XP, _X + "_parse_xml_commands", 18),
    "xml_attr_unquoted": Locator(_XP, _X + "_check_attribute_issues", 1, (
        ("command_num", "n"), ("attr_name", "name"), ("attr_value", "value"))),
    "xml_attr_single": Locator(_XP, _X + "_check_attribute_issues", 3, (
        ("command_num", "n"), ("attr_name", "name"), ("attr_value", "value"))),
    "xml_attr_unknown": Locator(_XP, _X + "_check_attribute_issues", 6, (
        ("command_num", "n"), ("attr_name", "name"),
        ("', '.join(sorted(known_attributes))", "known"))),
}


def _template(parts: list[Part], locator: Locator, key: str) -> str:
    names = dict(locator.names)
    seen = {p.source for p in parts if isinstance(p, Placeholder)}
    if seen != set(names):
        raise HarborPackError(
            f"Harbor's {locator.file} {locator.function} literal #{locator.index} (pack key "
            f"{key}) interpolates {sorted(seen)}, expected {sorted(names)}: this Harbor "
            "version's Terminus 2 differs from the one the harbor pack was written for")
    return "".join(names[p.source].join("{}") if isinstance(p, Placeholder)
                   else p.replace("{", "{{").replace("}", "}}") for p in parts)


def harbor_texts(agent_dir: Path) -> dict[str, str]:
    texts = {key: (agent_dir / "templates" / name).read_text(encoding="utf-8")
             for key, name in TEMPLATE_FILES.items()}
    sources: dict[str, str] = {}
    for key, locator in LOCATORS.items():
        path = agent_dir / locator.file
        if locator.file not in sources:
            if not path.is_file():
                raise HarborPackError(f"{path} is missing (is this a Harbor install?)")
            sources[locator.file] = path.read_text(encoding="utf-8")
        try:
            found = literals(sources[locator.file], locator.function)
        except KeyError as e:
            raise HarborPackError(f"{path}: no function {locator.function} (pack key "
                                  f"{key})") from e
        if locator.index >= len(found):
            raise HarborPackError(f"{path}: {locator.function} has no literal "
                                  f"#{locator.index} (pack key {key})")
        texts[key] = _template(found[locator.index], locator, key)
    return texts


def _version(agent_dir: Path) -> str:
    site = agent_dir.parent.parent.parent
    found = sorted(site.glob("harbor-*.dist-info"))
    return found[-1].name.removeprefix("harbor-").removesuffix(".dist-info") if found else "?"


def harbor_pack() -> PromptPack:
    agent_dir = find_agent_dir()
    texts = harbor_texts(agent_dir)
    check_pack(texts, f"harbor ({agent_dir})")
    return PromptPack(name="harbor", texts=texts, source=str(agent_dir),
                      version=_version(agent_dir))
