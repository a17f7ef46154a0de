"""`rsr factory ...`: run the RSR data factory, watch it, report on it, critique runbooks."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(help="The RSR data factory: discover, rewrite, verify, export SFT data.",
                  no_args_is_help=True)


@app.command()
def run(
    config: Path = typer.Argument(..., help="factory.yaml"),
    stage: list[str] = typer.Option(None, "--stage", help="Run only these stages (repeatable): "
                                    "discover, compress, plan, execute, filter, export."),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Override output_dir."),
    display: str | None = typer.Option(None, "--display", help="factory (stage progress bar) "
                                       "or inspect (Inspect's per-sample display)."),
) -> None:
    """Run all stages (or the ones named), resuming from the ledger in output_dir."""
    from rsr.errors import RsrError
    from rsr.factory.config import STAGES, load_config
    from rsr.factory.pipeline import run as run_pipeline

    cfg = load_config(config, output_dir)
    if display is not None:
        if display not in ("factory", "inspect"):
            raise RsrError(f"--display {display}: use factory or inspect")
        cfg.display = display  # type: ignore[assignment]
    for s in stage or []:
        if s not in STAGES:
            raise RsrError(f"--stage {s}: unknown stage; stages: {', '.join(STAGES)}")
    stages = [s for s in STAGES if s in stage] if stage else None
    run_pipeline(cfg, stages)


@app.command()
def status(
    config: Path = typer.Argument(..., help="factory.yaml"),
    output_dir: Path | None = typer.Option(None, "--output-dir"),
) -> None:
    """The funnel so far, the cost, and what is left (JSON)."""
    from rsr.factory.config import load_config
    from rsr.factory.pipeline import status as factory_status

    print(json.dumps(factory_status(load_config(config, output_dir)), indent=2))


@app.command()
def report(
    config: Path = typer.Argument(..., help="factory.yaml"),
    output_dir: Path | None = typer.Option(None, "--output-dir"),
) -> None:
    """Write report/report.md, report.json and the UpSet-style plot; print the Markdown."""
    from rsr.factory.config import load_config
    from rsr.factory.ledger import FactoryPaths
    from rsr.factory.report import write

    cfg = load_config(config, output_dir)
    md, _ = write(FactoryPaths(cfg.output_dir))
    print(md.read_text())
    Console(stderr=True).print(f"written: {md}")


@app.command()
def critique(
    task_dir: Path = typer.Argument(..., help="The task directory."),
    runbook: Path = typer.Argument(..., help="Runbook JSON (the planner's object)."),
    deterministic_only: bool = typer.Option(False, "--deterministic-only",
                                            help="Skip the model review."),
    model: str | None = typer.Option(None, "--model", help="Critic model (Inspect name)."),
    config: Path | None = typer.Option(None, "--config", help="Take the critic model (and its "
                                       "model args) from this factory.yaml."),
    source: Path | None = typer.Option(None, "--source-files", help="A folder of files the "
                                       "source run produced (answer-leak checks)."),
) -> None:
    """Print one JSON object: {"verdict": "accept"|"reject", "reasons": [...]}; exit 1 on reject."""
    import asyncio

    from rsr.errors import RsrError
    from rsr.factory.critique import deterministic_checks, deterministic_verdict, model_review
    from rsr.factory.records import Source
    from rsr.tasks.load import load_task

    task = load_task(task_dir)
    if not runbook.is_file():
        raise RsrError(f"{runbook}: runbook file not found")
    src = None
    if source is not None:
        files = {str(p.relative_to(source)): p.read_text(errors="replace")
                 for p in sorted(source.rglob("*")) if p.is_file()}
        src = Source(id="cli", task=task.name, task_dir=str(task.paths.task_dir), suite="cli",
                     harness="cli", epoch=1, reward=1, turns=0, tokens=0, log="", instruction="",
                     messages=[], commands=[], produced_files=files)
    body, reasons = deterministic_checks(task, runbook.read_text(), src)
    verdict = deterministic_verdict(reasons)
    if body is not None and verdict.verdict == "accept" and not deterministic_only:
        from inspect_ai.model import get_model

        model_args: dict = {}
        name = model
        if config is not None:
            from rsr.factory.config import load_config

            cfg = load_config(config)
            name = name or cfg.models.for_role("critic")
            model_args = cfg.models.model_args
        if name is None:
            raise RsrError("the model review needs --model or --config (or pass "
                           "--deterministic-only)")
        if name.startswith("rsr-scripted/"):
            import rsr.factory.scripted  # noqa: F401

        verdict, _ = asyncio.run(model_review(get_model(name, **model_args), task.instruction,
                                              body))
    print(json.dumps({"verdict": verdict.verdict, "reasons": verdict.reasons,
                      "stage": verdict.stage}, indent=2))
    if verdict.verdict == "reject":
        raise typer.Exit(1)
