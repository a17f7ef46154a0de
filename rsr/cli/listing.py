"""`rsr list`: the names rsr registers with Inspect, and the options each one takes."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape


def list_names() -> None:
    """List rsr's Inspect names (tasks, harnesses, the offline model) and their options."""
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
