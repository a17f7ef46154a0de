"""Options (`-T`, `-S`, `-M`) are checked here, names and values, before anything runs.

Inspect hands a task only the `-T` names its function declares and drops the others with a log
warning, so `-T taks=hello-world` runs every task; an agent given an unknown `-S` ends in
Python's TypeError at the bottom of a long traceback. rsr's tasks and harnesses therefore take
`**options` (Inspect then passes every name) and refuse the undeclared ones in one line that
names the closest declared option and lists them all.

Values are checked against the factory's own type hints (`-T evidence=maybe` for a bool, `-S
max_episodes=abc` for an int, `-S reply_format=yaml` for a Literal) and, through
`option_model`, against the ranges of the config model a factory builds (`-S max_episodes=0`).
Python does not check annotations and a pydantic model's ValidationError is a page of
traceback; here either is one line naming the option, the value given and what is valid.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from rsr.errors import OptionValueError, UnknownOptionError

M = TypeVar("M", bound=BaseModel)


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


def check_options(owner: str, flag: str, factory: Callable[..., Any], values: Mapping[str, Any]) -> None:
    """Refuse unknown names and values of the wrong type, in one line each.

    `values` is the factory's `locals()` at entry: its declared parameters and `options`, the
    catch-all of undeclared ones. A value still identical to its default is not checked (a
    default of None for a `str` option is the factory's business)."""
    refuse_unknown_options(owner, flag, values.get("options") or {}, factory)
    hints = _hints(factory)
    for param in inspect.signature(factory).parameters.values():
        if param.name not in values or param.name not in hints:
            continue
        value = values[param.name]
        if value is param.default:
            continue
        problem = _type_problem(hints[param.name], value)
        if problem:
            raise OptionValueError(owner, flag, param.name, value, problem, param.default)


def option_model(owner: str, flag: str, model: type[M], **values: Any) -> M:
    """`model(**values)`, with a ValidationError turned into one line naming the first bad option."""
    try:
        return model(**values)
    except ValidationError as e:
        err = e.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else "?"
        # No default is named: the model's may differ from the factory's (statem's max_episodes).
        raise OptionValueError(owner, flag, name, values.get(name, err.get("input")),
                               _describe(err), inspect.Parameter.empty) from None


def _hints(factory: Callable[..., Any]) -> dict[str, Any]:
    target = inspect.unwrap(factory)
    try:
        return typing.get_type_hints(target)
    except Exception:  # an annotation that names something not importable: nothing to check against
        return {}


# Only these annotations are checked: a `str` option takes any text, and richer types (paths,
# lists) are parsed and checked where they are used, with their own messages.
_CHECKED = (bool, int, float)


def _checkable(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return True
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return bool(args) and all(_checkable(a) for a in args)
    return annotation in _CHECKED


def _type_problem(annotation: Any, value: Any) -> str | None:
    if not _checkable(annotation):
        return None
    try:
        TypeAdapter(annotation).validate_python(value)
    except ValidationError as e:
        return _describe(e.errors()[0], annotation)
    return None


def _describe(err: Any, annotation: Any = None) -> str:
    if annotation is not None:
        names = {bool: "true or false", int: "a whole number", float: "a number"}
        args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
        parts: list[str] = []
        for a in args:
            if typing.get_origin(a) is typing.Literal:
                parts.append("one of " + ", ".join(str(v) for v in typing.get_args(a)))
            elif a in names:
                parts.append(names[a])
        if type(None) in typing.get_args(annotation):
            parts.append("null")
        if parts:
            return "expected " + " or ".join(parts)
    msg = str(err.get("msg", "invalid"))
    return msg[0].lower() + msg[1:]
