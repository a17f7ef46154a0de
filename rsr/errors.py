"""Error types. Anything a user can fix is an RsrError, printed without a traceback."""

from __future__ import annotations

import difflib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

_INSPECT_ERRORS = "inspect_ai._util.error"


def _prerequisite_error() -> type[Exception]:
    """Inspect's PrerequisiteError, without importing the rest of Inspect.

    RsrError must BE a PrerequisiteError so that `inspect eval` prints it without a traceback,
    but `import inspect_ai._util.error` first runs inspect_ai/__init__.py, which loads the whole
    framework (about a second) and would make every light command (`rsr --help`, `rsr tasks
    lint`) slow. That one module needs only pydantic and rich, so it is loaded on its own and
    registered under its real name: when Inspect is imported later, its own imports find this
    module in sys.modules, so Inspect and rsr share one PrerequisiteError class.
    """
    module = sys.modules.get(_INSPECT_ERRORS)
    if module is None:
        spec = importlib.util.find_spec("inspect_ai")  # locates the package without running it
        roots = list(spec.submodule_search_locations or []) if spec else []
        source = Path(roots[0], "_util", "error.py") if roots else None
        if source is None or not source.is_file():  # an unusual install: pay for the full import
            from inspect_ai._util.error import PrerequisiteError

            return PrerequisiteError
        module_spec = importlib.util.spec_from_file_location(_INSPECT_ERRORS, source)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[_INSPECT_ERRORS] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[_INSPECT_ERRORS]
            raise
    return module.PrerequisiteError


if TYPE_CHECKING:
    from inspect_ai._util.error import PrerequisiteError
else:
    PrerequisiteError = _prerequisite_error()


def plain_line(message: str) -> str:
    """Inspect's prerequisite messages as one plain line: their rich markup
    (`[bold][blue]OPENAI_API_KEY[/blue][/bold]`) rendered away and their lines joined."""
    from rich.errors import MarkupError
    from rich.text import Text

    try:
        message = Text.from_markup(message).plain
    except MarkupError:
        pass
    message = " ".join(message.split())
    return message.removeprefix("ERROR: ")


class RsrError(PrerequisiteError):
    """A problem the user can fix; the message says how."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class FileFormatError(RsrError):
    """A file (task, recipe, config, spec) is malformed; names the file and the offending field."""

    def __init__(self, path: str | Path, field: str | None, message: str) -> None:
        where = f"{path}: {field}" if field else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.field = field
        self.reason = message

    def to_dict(self) -> dict[str, str | None]:
        return {"file": self.path, "field": self.field, "message": self.reason}


class TaskFormatError(FileFormatError):
    """A task file is malformed."""


class DatasetLoadError(RsrError):
    """One or more tasks of a dataset failed to load; carries every failure, not just the first."""

    def __init__(self, errors: list[TaskFormatError]) -> None:
        self.errors = errors
        # One line: the first task's problem, and how many others (`rsr tasks lint` lists them all).
        more = (f" (and {len(errors) - 1} more; `rsr tasks lint FOLDER` lists every one)"
                if len(errors) > 1 else "")
        super().__init__(f"{len(errors)} invalid task(s): {errors[0]}{more}")


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The choice a typo most likely meant, if any is close."""
    found = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


class UnknownOptionError(RsrError):
    """An option (`-T`, `-S`, `-M`) that its task, harness or model does not take.

    Raised by rsr.options.refuse_unknown_options, which says why.
    """

    def __init__(self, owner: str, flag: str, unknown: list[str], valid: Iterable[str]) -> None:
        valid = sorted(valid)
        hints = [f"{flag} {name}" + (f" (did you mean {flag} {hint}?)" if (hint := closest(name, valid))
                                     else "") for name in unknown]
        super().__init__(f"{owner}: unknown option {', '.join(hints)}; "
                         f"its options: {', '.join(valid) or 'none'}")
        self.unknown = unknown



class OptionValueError(RsrError):
    """A `-T`, `-S` or `-M` value of the wrong type or out of range (rsr.options checks them)."""

    def __init__(self, owner: str, flag: str, name: str, value: object, problem: str,
                 default: object = None) -> None:
        import inspect

        shown = value if isinstance(value, str) else repr(value)
        fix = f"leave {flag} {name} out" + ("" if default is inspect.Parameter.empty or default is None
                                             else f" for its default ({default})")
        super().__init__(f"{owner}: {flag} {name}={shown}: {problem}; give a valid value or {fix}")
        self.name = name


class UserPathError(RsrError):
    """A path option that cannot be used as asked (a file where a folder is needed, unwritable)."""
