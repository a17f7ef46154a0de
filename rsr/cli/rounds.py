"""`rsr rounds CONFIG` (self-improvement rounds) and `rsr rounds status CONFIG`.

Heavy imports happen inside the commands, so `rsr --help` stays fast without the [train] extra.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import typer
from typer.core import TyperGroup


class _DefaultRun(TyperGroup):
    """`rsr rounds CONFIG` means `rsr rounds run CONFIG`; named subcommands still win."""

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


app = typer.Typer(cls=_DefaultRun, no_args_is_help=True,
                  help="Self-improvement rounds: factory -> train -> evaluate, R times, each "
                       "round's model serving the next round's rollouts: `rsr rounds CONFIG`.")


@app.command("run")
def run_cmd(
    config: Path = typer.Argument(..., help="Rounds config YAML, e.g. examples/rounds-smoke.yaml."),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Override output_dir."),
    rounds: int | None = typer.Option(None, "--rounds", min=1, help="Override rounds (R)."),
) -> None:
    """Run (or resume) every round; one ledger row per round in output_dir/ledger.jsonl."""
    from rsr.errors import RsrError
    from rsr.rounds.config import load_rounds_config
    from rsr.rounds.loop import run

    cfg = load_rounds_config(config, output_dir)
    if rounds is not None:
        if rounds < 1:
            raise RsrError(f"--rounds {rounds}: give 1 or more")
        cfg.rounds = rounds
    run(cfg)


@app.command("status")
def status_cmd(
    config: Path = typer.Argument(..., help="Rounds config YAML."),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Override output_dir."),
) -> None:
    """The rounds finished (with their figures), the stages done in the next one (JSON)."""
    from rsr.rounds.config import load_rounds_config
    from rsr.rounds.loop import status

    print(json.dumps(status(load_rounds_config(config, output_dir)), indent=2))
