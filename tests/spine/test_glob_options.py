"""`-T tasks=` / `-T exclude=` globs as a shell user types them, through Inspect's own `-T` parser."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from inspect_ai._util.config import parse_cli_args  # what `inspect eval -T` runs

from rsr.cli.eval import _task_args
from rsr.tasks.load import load_dataset

REPO = Path(__file__).resolve().parents[2]


def _readme_glob_command() -> list[str]:
    text = (REPO / "README.md").read_text()
    line = next(ln for ln in text.splitlines() if re.match(r"inspect eval rsr/core .*-T exclude=", ln))
    return shlex.split(line.split("#")[0] if " #" in line else line)


def test_readme_glob_command_does_parse_and_select_through_inspects_task_args() -> None:
    argv = _readme_glob_command()
    values = [argv[i + 1] for i, a in enumerate(argv) if a == "-T"]
    args = parse_cli_args(values)
    assert args["exclude"] == "*-slow"
    loaded = load_dataset(REPO / "tasks/core", args["tasks"], args["exclude"])
    names = {t.name for t in loaded.tasks}
    assert names and all(n.startswith(("hello-", "git-")) for n in names)
    assert not any(n.endswith("-slow") for n in names)


def test_inspect_task_args_do_take_a_quoted_star_glob() -> None:
    assert parse_cli_args(['tasks="*"'])["tasks"] == "*"
    assert len(load_dataset(REPO / "tasks/core", "*", None).tasks) > 1


def test_rsr_eval_task_args_do_take_a_leading_star_as_typed() -> None:
    assert _task_args(["exclude=*-slow", "tasks=*"]) == {"exclude": "*-slow", "tasks": "*"}
