"""Read a YAML file into a pydantic model, with errors that name the file and the field.

One loader for every YAML format of ours (recipes, eval-set specs, factory configs), so they all
report a bad file the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rsr.errors import FileFormatError

M = TypeVar("M", bound=BaseModel)


def read_yaml_mapping(path: str | Path, what: str = "file",
                      error: type[FileFormatError] = FileFormatError) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        raise error(path, None, f"is a folder; expected a {what} (a YAML file)")
    if not path.is_file():
        raise error(path, None, f"{what} not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise error(path, None, f"not a text file; expected a {what} (YAML)") from None
    except OSError as e:
        raise error(path, None, f"cannot be read ({e.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        # One line: the parser's message spans several, with a caret under the column.
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise error(path, None, f"not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise error(path, None, f"expected a {what}: a YAML mapping of keys, got "
                                f"{type(data).__name__ if data is not None else 'an empty file'}")
    return data


def validate_model(path: str | Path, model: type[M], data: dict[str, Any],
                   error: type[FileFormatError] = FileFormatError) -> M:
    """Validate; the error names the first bad field and counts the others. An unknown key is
    named first: a misspelt key is the likeliest cause of the "Field required" beside it."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
        first = next((err for err in errors if err["type"] == "extra_forbidden"), errors[0])
        field = ".".join(str(p) for p in first["loc"]) or None
        more = f" (and {e.error_count() - 1} more problem(s))" if e.error_count() > 1 else ""
        raise error(path, field, f"{first['msg']}{more}") from e


def load_yaml_model(path: str | Path, model: type[M], what: str = "file",
                    error: type[FileFormatError] = FileFormatError) -> M:
    return validate_model(path, model, read_yaml_mapping(path, what, error), error)
