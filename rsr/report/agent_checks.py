"""What a board checks about the agent behind a log, whatever its model is called (invariant 8).

- `solution_replay`: a sample whose commands type the task's reference solution. The comparison
  is the leak critic's (rsr.factory.critique): solve.sh's commands compared as parsed tokens
  (`command_leaks`) and the solution files' distinctive lines (those the public task does not
  show, less boilerplate any program has: shebangs, imports, `if __name__`). A sample is a
  replay when it repeats at least half of either, and at least `MIN_COMMANDS` commands or
  `MIN_LINES` lines: a task whose whole answer is a few short commands cannot tell a replay from
  honest work, and is never called one.
- `nondefault_args`: the harness arguments a run set away from their defaults (the log header's
  solver arguments, against the registered harness's signature), and a hidden prompt the harness
  recorded in the sample store (`private_guidance_sha256`) even when the header no longer names
  it. A board refuses such a run or labels its entry with them (`harness_args` in board.yaml).
"""

from __future__ import annotations

import hashlib
import inspect
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["MIN_COMMANDS", "MIN_LINES", "Reference", "Replay", "nondefault_args", "solution_replay"]

MIN_COMMANDS = 3
MIN_LINES = 5
REPLAY_SHARE = 0.5
# Lines any program of its kind has: typing them is no sign of having seen the solution.
_BOILERPLATE = re.compile(r"^(#!|import\s|from\s+\S+\s+import\s|if\s+__name__\s*==|set\s+-[euxo])")
HIDDEN_PROMPT_KEY = "private_guidance"
_SHOWN = 60


class Replay(BaseModel):
    """How much of the reference solution a sample's commands repeat."""

    model_config = ConfigDict(extra="forbid")

    commands: int
    of_commands: int
    lines: int
    of_lines: int
    example: str = ""

    @property
    def replayed(self) -> bool:
        return any(total >= least and found >= max(least, REPLAY_SHARE * total)
                   for found, total, least in ((self.commands, self.of_commands, MIN_COMMANDS),
                                               (self.lines, self.of_lines, MIN_LINES)))

    def describe(self) -> str:
        return (f"its commands repeat {self.commands} of the {self.of_commands} distinctive commands and "
                f"{self.lines} of the {self.of_lines} distinctive lines of the task's reference solution "
                f"(e.g. {self.example!r})")


class Reference:
    """A task's reference solution as the comparison reads it, computed once per task."""

    def __init__(self, task: Any) -> None:
        from rsr.factory.critique import TaskMaterial, _lines, _norm, command_leaks

        self.material = TaskMaterial.of(task)
        self.material.tests = {}  # the solution only: reading the tests is the hack review's business
        solution = "\n".join(self.material.solution.values())
        self.commands = {r.item for r in command_leaks(solution, self.material)}
        public = _norm(self.material.public)
        self.lines = {norm: original for norm, original in _lines(solution)
                      if norm not in public and not _BOILERPLATE.match(original)}


def solution_replay(typed: str, reference: Reference) -> Replay:
    """How much of a task's reference solution the text an agent typed (its commands, joined) repeats."""
    from rsr.factory.critique import _norm, command_leaks

    repeated = [r.item for r in command_leaks(typed, reference.material) if r.item in reference.commands]
    norm_typed = _norm(typed)
    found = [original for norm, original in reference.lines.items() if norm in norm_typed]
    example = (repeated or found or [""])[0][:_SHOWN]
    return Replay(commands=len(repeated), of_commands=len(reference.commands), lines=len(found),
                  of_lines=len(reference.lines), example=example)


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= _SHOWN:
        return text
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()[:12]} ({len(text)} chars)"


def _defaults(solver: str) -> dict[str, Any] | None:
    """The registered harness's argument defaults (None: not one of rsr's)."""
    from rsr._registry import HARNESSES

    factory = HARNESSES.get(solver)
    if factory is None:
        return None
    params = inspect.signature(factory).parameters.values()
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def nondefault_args(solver: str | None, solver_args: dict[str, Any] | None,
                    stores: list[dict[str, Any]]) -> dict[str, str]:
    """name -> shown value of every harness argument a run set away from its default; a hidden
    prompt by its digest and length, never its text. For a harness that is not rsr's, every
    argument given counts (its defaults are unknown here)."""
    defaults = _defaults(solver or "") or {}
    out: dict[str, str] = {}
    for name, value in sorted((solver_args or {}).items()):
        if name in defaults and value == defaults[name]:
            continue
        if value is None and name not in defaults and defaults:
            continue
        out[name] = _shown(value)
    for store in stores:
        digest = (store.get("rsr_harness") or {}).get(f"{HIDDEN_PROMPT_KEY}_sha256")
        if digest and HIDDEN_PROMPT_KEY not in out:
            out[HIDDEN_PROMPT_KEY] = f"sha256:{str(digest)[:12]} (hidden prompt; the header does not name it)"
    return out
