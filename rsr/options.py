"""Options (`-T`, `-S`, `-M`) that a task, harness or model does not declare are refused.

Inspect hands a task only the `-T` names its function declares and drops the others with a log
warning, so `-T taks=hello-world` runs every task; an agent given an unknown `-S` ends in
Python's TypeError at the bottom of a long traceback. rsr's tasks and harnesses therefore take
`**options` (Inspect then passes every name) and refuse the undeclared ones in one line that
names the closest declared option and lists them all.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from rsr.errors import UnknownOptionError


def declared_options(factory: Callable[..., Any]) -> list[str]:
    """The option names `factory` declares: its named parameters, not its `**options`."""
    return [p.name for p in inspect.signature(factory).parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]


def refuse_unknown_options(owner: str, flag: str, given: Iterable[str], factory: Callable[..., Any]) -> None:
    """Raise UnknownOptionError naming `owner` (e.g. rsr/core) for each undeclared name in `given`."""
    valid = declared_options(factory)
    unknown = [name for name in given if name not in valid]
    if unknown:
        raise UnknownOptionError(owner, flag, unknown, valid)
