"""`rsr trajectories ...`: export harness runs from Inspect logs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(help="Export harness trajectories from Inspect logs.", no_args_is_help=True)


@app.command()
def export(
    logs: list[Path] = typer.Argument(..., help="Inspect .eval/.json logs of rsr harness runs, or folders of them."),
    fmt: str = typer.Option("atif", "--format", help="atif (one JSON file per sample) or "
                            "messages (messages.jsonl, one training row per sample)."),
    out: Path = typer.Option(..., "--out", help="Output directory (created if missing)."),
    only: str = typer.Option("all", "--only", help="all, passed or failed samples."),
    keep: list[str] = typer.Option([], "--keep", help="messages: control kinds to keep "
                                   "verbatim (e.g. --keep confirm)."),
    view: str = typer.Option("public", "--view", help="messages: public (one row per sample, control "
                             "removed), terminus2 (one row per model context, exactly what the model was "
                             "sent under Terminus 2) or as-run (every context as the source harness sent it)."),
) -> None:
    """Write ATIF trajectories or public messages; API keys and env secrets are redacted."""
    from rsr.errors import RsrError
    from rsr.trajectories.export import export_logs

    if fmt not in ("atif", "messages"):
        raise RsrError(f"--format must be atif or messages, not {fmt!r}")
    if only not in ("all", "passed", "failed"):
        raise RsrError(f"--only must be all, passed or failed, not {only!r}")
    if view not in ("public", "terminus2", "as-run"):
        raise RsrError(f"--view must be public, terminus2 or as-run, not {view!r}")
    from rsr.trajectories.export import expand
    from rsr.user_paths import output_dir

    output_dir(out, "--out")
    summary = export_logs(expand(logs), fmt, out, only, tuple(keep), view)  # type: ignore[arg-type]
    console = Console()
    console.print(f"{summary.written} of {summary.samples} samples written to {out} "
                  f"({summary.skipped_outcome} filtered by --only, "
                  f"{summary.skipped_not_harness} not from an rsr harness)")
