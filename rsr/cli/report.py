"""`rsr report ...`: reports from Inspect `.eval` logs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(help="Reports from .eval logs (Table 5, per-task breakdowns).",
                  no_args_is_help=True)


@app.command()
def table5(
    log_dirs: Annotated[list[Path], typer.Argument(help="Log folders, one per labelled run.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for table5.md/.csv/.png.")] = Path(
        "report"),
    label: Annotated[list[str] | None, typer.Option(
        "--label", help="Label of each folder, in order (default: the folder's name).")] = None,
    paper: Annotated[Path | None, typer.Option(
        "--paper", help="Reference numbers (YAML); default: the paper's Table 5.")] = None,
    regrade: Annotated[bool, typer.Option(
        "--regrade", help="Re-run the verifier on every log's evidence bundles (Docker) and mark each "
        "cell: ✓ reproduced, ✗ not reproduced, ? no bundles.")] = False,
) -> None:
    """Table 5 from log folders: benchmarks x runs, the paper's numbers beside."""
    from rsr.errors import RsrError
    from rsr.report.metrics import headline
    from rsr.report.table5 import build_table5, caveat_note, load_paper_table, write_table5

    table = build_table5(log_dirs, label or [], load_paper_table(paper) if paper else None,
                         regrade=regrade)
    empty = [str(r.folder) for r in table.runs if not r.runs]
    if empty:
        # A table of empty columns would look like a run that solved nothing.
        raise RsrError(f"{', '.join(empty)}: no .eval logs found (a run's folder holds the logs "
                       "`rsr eval table5 --log-dir DIR` wrote); nothing was written")
    paths = write_table5(table, out)
    console = Console()
    for r in table.runs:
        found = ", ".join(f"{b} ({r.verification[b]})" if b in r.verification else b
                          for b in sorted(r.metrics)) or "nothing"
        console.print(f"[bold]{r.label}[/bold]: {found}")
        for bench, m in sorted(r.metrics.items()):
            console.print(f"  {bench}: {headline(m)}" + caveat_note(r.runs.get(bench)), highlight=False)
        for note in r.notes:
            console.print(f"  [yellow]note:[/yellow] {note}")
    for kind, path in paths.items():
        console.print(f"wrote {kind}: {path}")


@app.command()
def verdict(
    oracle: Annotated[Path, typer.Option("--oracle", help="Log folder of the rsr/oracle run.")],
    null: Annotated[Path, typer.Option("--null", help="Log folder of the rsr/null run.")],
) -> None:
    """One line on a suite's health: the oracle passes every sample, the null agent none
    (exit 1 otherwise, naming the tasks at fault)."""
    from rsr.errors import RsrError
    from rsr.report.verdict import suite_verdict

    try:
        found = suite_verdict(oracle, null)
    except RsrError as e:  # a run that wrote no log: still one verdict line (on stderr), saying why
        raise RsrError(f"verdict: none: {e}") from None
    Console(soft_wrap=True).print(found.line(), markup=False, highlight=False)
    if not found.healthy:
        raise typer.Exit(1)


@app.command()
def run(
    logs: Annotated[list[Path], typer.Argument(help="`.eval` logs or folders of them (one run).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """The run report: rollouts per hour, sandbox start and model latency p50/p99, tokens per
    second in and out, infrastructure failures by kind."""
    from rich.table import Table

    from rsr.report.runstats import run_stats

    stats = run_stats(logs)
    if as_json:
        typer.echo(stats.model_dump_json(indent=2))
        return
    table = Table("measure", "value", title="run report")
    for k, v in stats.rows():
        table.add_row(k, v)
    Console().print(table)
