"""`rsr doctor`: is this machine ready to run sandboxes?"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table


def doctor(
    fix: bool = typer.Option(False, "--fix", help="Install and start the Docker engine, Compose v2 and base image."),
) -> None:
    """Check the Docker engine and Compose versions, the base image and free disk; report the
    inference engine (vLLM) environment, which only `rsr serve`, engine rounds and RL need."""
    # Imported here: rsr.sandbox grows the engine client, which `rsr --help` must not pay for.
    from rsr.sandbox.docker_setup import fix as run_fix
    from rsr.sandbox.docker_setup import run_checks

    console = Console()
    if fix:
        rc = run_fix()
        if rc != 0:
            console.print(f"[red]setup failed (exit {rc})[/red]")
            raise typer.Exit(rc)
    checks = run_checks()
    table = Table("check", "status", "detail")
    for c in checks:
        table.add_row(c.name, "[green]ok[/green]" if c.ok else "[red]FAIL[/red]", c.detail)
    table.add_row(*_engine_row())
    console.print(table)
    failed = [c for c in checks if not c.ok]
    for c in failed:
        console.print(f"[yellow]fix {c.name}:[/yellow] {c.fix}")
    if failed:
        raise typer.Exit(1)


def _engine_row() -> tuple[str, str, str]:
    """The vLLM environment's row: informational, since sandboxes do not need it."""
    from rsr.engine.env import SETUP_COMMAND, find_engine

    engine = find_engine()
    if engine is None:
        return ("inference engine", "[yellow]absent[/yellow]",
                f"optional (rsr serve, RL, engine rounds): run `{SETUP_COMMAND}`")
    return ("inference engine", "[green]ok[/green]", f"{engine.label} in {engine.venv}")
