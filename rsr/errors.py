"""Error types. Anything a user can fix is an RsrError, printed without a traceback."""

from __future__ import annotations

from pathlib import Path

from inspect_ai._util.error import PrerequisiteError


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
        lines = "\n".join(f"  - {e}" for e in errors)
        super().__init__(f"{len(errors)} invalid task(s):\n{lines}")
