"""`rsr regrade LOG...`: re-run the verifier on each sample's evidence bundle (no model, no agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console


def regrade(
    logs: Annotated[list[Path], typer.Argument(help=".eval logs (or folders) whose bundles to regrade.")],
    tasks: Annotated[Path | None, typer.Option(
        "--tasks", help="Suite folder to load the tasks from (default: the task paths the log recorded).")] = None,
    store: Annotated[Path | None, typer.Option(
        "--store", help="Bundle store (default: evidence/ beside each log).")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the reports as JSON here.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Samples regraded at a time.")] = 1,
    integrity: Annotated[str | None, typer.Option(
        "--integrity", help="Require this integrity mode (strict): a sample whose record names a weaker one "
        "is bundle-modified. Default: what each task requires (strict when it declares its deliverables).")] = None,
) -> None:
    """Rebuild each sample's final state from its bundle on the pristine task image, run the task's
    tests with this rsr's verifier, and compare with the logged score; exit 1 unless every sample of
    every log is reproduced."""
    from rich.progress import Progress

    from rsr.errors import RsrError
    from rsr.report.logs import readable_logs
    from rsr.verify.regrade import RegradeReport, regrade_log

    if integrity not in (None, "strict", "warn"):
        raise RsrError(f"--integrity {integrity!r}: expected strict or warn")
    files = readable_logs(logs)
    console = Console()
    reports: list[RegradeReport] = []
    with Progress(console=console, transient=True) as progress:
        for f in files:
            bar = progress.add_task(f"regrading {f.name}", total=None)
            reports.append(regrade_log(f, store=store, tasks_root=tasks, jobs=jobs,
                                       required=integrity,  # type: ignore[arg-type]
                                       on_sample=lambda s, bar=bar: progress.advance(bar)))
    for r in reports:
        colour = "green" if r.ok else "red"
        console.print(f"[{colour}]{'reproduced' if r.ok else 'NOT reproduced'}[/{colour}] {r.log}: "
                      f"{r.reproduced}/{len(r.samples)} samples; manifest {r.manifest or '-'}; "
                      f"verifier rsr {r.verifier}")
        for s in r.samples:
            took = f" in {s.seconds:.1f}s" if s.seconds is not None else ""
            line = f"  {s.where} ({s.task_name}): {s.status}{took}"
            console.print(line + (f": {s.reason}" if s.reason else ""), highlight=False, markup=False)
    if json_out is not None:
        json_out.write_text("[" + ",\n".join(r.model_dump_json() for r in reports) + "]\n")
    if not all(r.ok for r in reports):
        raise typer.Exit(1)
