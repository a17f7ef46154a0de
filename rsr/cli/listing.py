"""`rsr list`: the names rsr registers with Inspect, and the options each one takes."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape


def list_names(tasks: str | None = typer.Option(
        None, "--tasks", metavar="SUITE|DIR",
        help="List the task names of a suite (core, tb2, ...) or a tasks folder instead.")) -> None:
    """List rsr's Inspect names (tasks, harnesses, the offline model) and their options."""
    if tasks is not None:
        list_tasks(tasks)
        return
    from rsr import _registry
    from rsr.factory.scripted import PROVIDER
    from rsr.options import declared_options

    groups = {
        "tasks: inspect eval NAME -T OPTION=VALUE": {
            name: declared_options(f) for name, f in _registry.TASKS.items()},
        "harnesses: --solver NAME -S OPTION=VALUE": {
            name: declared_options(f) for name, f in _registry.HARNESSES.items()},
        "offline model: --model NAME -M OPTION=VALUE": {f"{PROVIDER}/<role>": ["fixture"]},
    }
    console = Console(soft_wrap=True)  # one line per name, so it greps
    for title, names in groups.items():
        console.print(f"[bold]{escape(title)}[/bold]")
        width = max(map(len, names))
        for name, options in names.items():
            console.print(f"  {escape(name.ljust(width))}  {', '.join(options) or '(none)'}")
    console.print("the task names of a suite: rsr list --tasks SUITE (e.g. core)")


def list_tasks(target: str) -> None:
    """One line per task of a suite or folder: the name `-T tasks=` takes, category, difficulty."""
    from rsr.errors import DatasetLoadError
    from rsr.suites.registry import SUITES, resolve_suite_path
    from rsr.tasks.load import load_dataset

    root = resolve_suite_path(target) if target in SUITES else Path(target)
    loaded = load_dataset(root)
    if loaded.errors:
        raise DatasetLoadError(loaded.errors)
    console = Console(soft_wrap=True)
    run = f"rsr/{target}" if target in SUITES else f"rsr/harbor -T path={target}"
    console.print(f"[bold]{escape(target)}[/bold]: {len(loaded.tasks)} tasks in {escape(str(root))} "
                  f"(run some with: inspect eval {escape(run)} -T tasks=NAME,...)", highlight=False)
    found = sorted(loaded.tasks, key=lambda t: t.name)
    width = max((len(t.name) for t in found), default=0)
    for t in found:
        cfg = t.config
        console.print(f"  {escape(t.name.ljust(width))}  {cfg.category or '-'}  {cfg.difficulty or '-'}",
                      highlight=False)
