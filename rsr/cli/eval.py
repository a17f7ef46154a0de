"""`rsr eval ...`: run eval sets defined in `evals/*.yaml` through Inspect's `eval_set`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(help="Run eval sets (suites x epochs, resumable).", no_args_is_help=True)


def _task_args(values: list[str]) -> dict[str, object]:
    from rsr.errors import RsrError

    out: dict[str, object] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RsrError(f"-T {item!r}: expected NAME=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _run(spec_name: str, model: str, label: str | None, log_dir: Path, suites: str | None,
         agent: str | None, task_arg: list[str], model_arg: list[str],
         strict: bool = True) -> None:
    from rsr.report.evalset import find_spec, load_eval_set, run_eval_set

    spec_path = find_spec(spec_name)
    spec = load_eval_set(spec_path).select(suites.split(",") if suites else None)
    console = Console()
    console.print(f"eval set [bold]{spec.name}[/bold] ({spec_path}): "
                  f"{', '.join(s.task for s in spec.suites)} x {spec.epochs} epochs -> {log_dir}")
    def skipped(suite: str, reason: str) -> None:
        console.print(f"[yellow]skipping {suite}[/yellow] (reports show it as missing): "
                      f"{reason}")

    ok, logs = run_eval_set(spec, model=model, log_dir=log_dir, label=label, agent=agent,
                            task_args=_task_args(task_arg), model_args=_task_args(model_arg),
                            skip_unavailable=not strict, on_skip=skipped)
    for log in logs:
        console.print(f"  {log}")
    if not ok:
        console.print("[yellow]not every suite finished; run the same command again to "
                      "resume[/yellow]")
        raise typer.Exit(1)


_MODEL = Annotated[str, typer.Option(
    "--model", help="Inspect model, e.g. vllm/CKPT or openai/gpt-4o.")]
_LABEL = Annotated[str | None, typer.Option(
    "--label", help="Run label recorded in the logs' metadata.")]
_LOG_DIR = Annotated[Path, typer.Option(
    "--log-dir", help="Where the .eval logs go (resumes if present).")]
_SUITES = Annotated[str | None, typer.Option("--suites", help="Only these suites, e.g. tb2,lhtb.")]
_AGENT = Annotated[str | None, typer.Option(
    "--agent", help="Override the spec's agent, e.g. rsr/oracle.")]
_TASK_ARG = Annotated[list[str] | None, typer.Option(
    "-T", help="Task argument NAME=VALUE for every suite.")]
_MODEL_ARG = Annotated[list[str] | None, typer.Option("-M", help="Model argument NAME=VALUE.")]
_SPEC_ARG = Annotated[str, typer.Argument(help="Eval-set spec: a path or a name in evals/.")]


@app.command("table5")
def table5(model: _MODEL, log_dir: _LOG_DIR, label: _LABEL = None, suites: _SUITES = None,
           agent: _AGENT = None, task_arg: _TASK_ARG = None, model_arg: _MODEL_ARG = None,
           spec: Annotated[str, typer.Option(
               "--spec", help="Eval-set spec name or path.")] = "table5",
           strict: Annotated[bool, typer.Option(
               "--strict/--skip-unavailable",
               help="Fail if a suite's tasks are not on this machine (default: skip it; "
                    "TB3/TB4/TBH/SWR100 are private to the paper's authors).")] = False,
           ) -> None:
    """The paper's Table 5 eval set (every suite x 3 epochs); rerun to resume."""
    _run(spec, model, label, log_dir, suites, agent, task_arg or [], model_arg or [], strict)


@app.command("run")
def run(spec: _SPEC_ARG, model: _MODEL, log_dir: _LOG_DIR, label: _LABEL = None,
        suites: _SUITES = None, agent: _AGENT = None, task_arg: _TASK_ARG = None,
        model_arg: _MODEL_ARG = None) -> None:
    """Run any eval-set spec; rerun the same command to resume."""
    _run(spec, model, label, log_dir, suites, agent, task_arg or [], model_arg or [])


@app.command("show")
def show(spec: _SPEC_ARG) -> None:
    """Validate a spec and print it resolved."""
    from rsr.report.evalset import find_spec, load_eval_set

    path = find_spec(spec)
    Console().print_json(load_eval_set(path).model_dump_json())
