"""`rsr eval ...`: run eval sets defined in `evals/*.yaml` through Inspect's `eval_set`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

app = typer.Typer(help="Run eval sets (suites x epochs, resumable).", no_args_is_help=True)


def _task_args(values: list[str], flag: str = "-T") -> dict[str, object]:
    from rsr.errors import RsrError

    out: dict[str, object] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RsrError(f"{flag} {item!r}: expected NAME=VALUE")
        if key in out:  # the last would silently win: `-T tasks=a -T tasks=b` ran only b
            raise RsrError(f"{flag} {key} given twice ({key}={out[key]} and {item}); give it once, "
                           f"e.g. {flag} {key}=a,b for a list")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def run_options(solver_arg: list[str] | None, limit: int | None, max_samples: int | None,
                temperature: float | None, max_tokens: int | None, top_p: float | None,
                seed: int | None, max_connections: int | None) -> dict[str, Any]:
    """Inspect's run and generate options as `rsr eval` takes them (`inspect eval`'s names), as
    `run_eval_set`'s keyword arguments."""
    generate = {"temperature": temperature, "max_tokens": max_tokens, "top_p": top_p,
                "seed": seed, "max_connections": max_connections}
    return {"solver_args": _task_args(solver_arg or [], "-S"), "limit": limit, "max_samples": max_samples,
            "generate": {k: v for k, v in generate.items() if v is not None}}


def invocation(ctx: typer.Context) -> str:
    """The command line that ran this command, to run it again from any directory."""
    import os
    import shlex

    words = shlex.join(["rsr", *((ctx.obj or {}).get("argv") or [])])
    return f"cd {shlex.quote(os.getcwd())} && {words}"


def _run(spec_name: str, model: str, label: str | None, log_dir: Path, suites: str | None,
         agent: str | None, task_arg: list[str], model_arg: list[str], strict: bool,
         options: dict[str, Any], command: str) -> None:
    from rsr.report.evalset import check_model, check_model_ready, find_spec, load_eval_set, run_eval_set
    from rsr.report.runguard import RunInterrupted
    from rsr.user_paths import output_dir

    check_model(model)  # a typo'd provider: one line, before anything is printed or loaded
    output_dir(log_dir, "--log-dir")
    task_args, model_args = _task_args(task_arg), _task_args(model_arg, "-M")
    check_model_ready(model, model_args)  # no API key, hf/local without model_path
    spec_path = find_spec(spec_name)
    spec = load_eval_set(spec_path).select(suites.split(",") if suites else None)
    console = Console()
    console.print(f"eval set [bold]{spec.name}[/bold] ({spec_path}): "
                  f"{', '.join(s.task for s in spec.suites)} x {spec.epochs} epochs -> {log_dir}")
    missing: list[str] = []

    def skipped(suite: str, reason: str) -> None:
        missing.append(suite)
        console.print(f"[yellow]skipping {suite}[/yellow] (reports show it as missing): "
                      f"{reason}", highlight=False)

    try:
        ok, logs = run_eval_set(spec, model=model, log_dir=log_dir, label=label, agent=agent,
                                task_args=task_args, model_args=model_args,
                                skip_unavailable=not strict, on_skip=skipped, command=command,
                                display=_display(), **options)
    except RunInterrupted as e:
        from rich.markup import escape

        # soft_wrap: the resume command must stay one line to be copied.
        Console(stderr=True, soft_wrap=True).print(f"[red]rsr eval: {escape(str(e))}[/red]")
        raise typer.Exit(e.exit_code) from None
    for log in logs:
        console.print(f"  {log}")
    from rsr.report.evalset import summary_lines

    # Inspect's display averages scored samples only; these count every sample.
    for line in summary_lines([p for p in logs if p.is_file()]):
        console.print(f"  {line}", highlight=False)
    if missing:
        from rsr.suites.registry import SUITES, how_to_fetch

        console.print(f"not on this machine: {', '.join(missing)}", highlight=False)
        for suite in missing:
            if suite in SUITES:
                console.print(f"  {suite}: {how_to_fetch(suite)}", highlight=False)
    if not ok:
        console.print("[yellow]not every suite finished; run the same command again to "
                      "resume[/yellow]")
        raise typer.Exit(1)


def _display() -> str | None:
    """Inspect's display, unless INSPECT_DISPLAY chooses: its default draws progress only on a
    terminal, so a run whose output goes to a file or a pipe (a batch job, CI) would show nothing
    until the end; there, `plain` prints a progress line as samples finish."""
    import os
    import sys

    if os.environ.get("INSPECT_DISPLAY") or sys.stdout.isatty():
        return None
    return "plain"


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
_SOLVER_ARG = Annotated[list[str] | None, typer.Option(
    "-S", help="Agent argument NAME=VALUE, layered over the spec's agent_args.")]
_LIMIT = Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N samples of each suite.")]
_MAX_SAMPLES = Annotated[int | None, typer.Option(
    "--max-samples", min=1, help="Samples run in parallel (overrides the spec).")]
_TEMPERATURE = Annotated[float | None, typer.Option("--temperature", min=0.0, help="Sampling temperature.")]
_MAX_TOKENS = Annotated[int | None, typer.Option("--max-tokens", min=1, help="Output tokens per model call.")]
_TOP_P = Annotated[float | None, typer.Option("--top-p", min=0.0, max=1.0, help="Nucleus sampling mass.")]
_SEED = Annotated[int | None, typer.Option("--seed", min=0, help="Sampling seed (providers that take one).")]
_MAX_CONNECTIONS = Annotated[int | None, typer.Option(
    "--max-connections", min=1, help="Concurrent connections to the model provider.")]
_SPEC_ARG = Annotated[str, typer.Argument(help="Eval-set spec: a path or a name in evals/.")]


@app.command("table5")
def table5(ctx: typer.Context, model: _MODEL, log_dir: _LOG_DIR, label: _LABEL = None, suites: _SUITES = None,
           agent: _AGENT = None, task_arg: _TASK_ARG = None, model_arg: _MODEL_ARG = None,
           spec: Annotated[str, typer.Option(
               "--spec", help="Eval-set spec name or path.")] = "table5",
           strict: Annotated[bool, typer.Option(
               "--strict/--skip-unavailable",
               help="Fail if a suite's tasks are not on this machine (default: skip it and "
                    "say how to fetch it; TBH/SWR100 are private to the paper's authors).")] = False,
           solver_arg: _SOLVER_ARG = None, limit: _LIMIT = None, max_samples: _MAX_SAMPLES = None,
           temperature: _TEMPERATURE = None, max_tokens: _MAX_TOKENS = None, top_p: _TOP_P = None,
           seed: _SEED = None, max_connections: _MAX_CONNECTIONS = None,
           ) -> None:
    """The paper's Table 5 eval set (every suite x 3 epochs); rerun to resume."""
    options = run_options(solver_arg, limit, max_samples, temperature, max_tokens, top_p, seed,
                          max_connections)
    _run(spec, model, label, log_dir, suites, agent, task_arg or [], model_arg or [], strict,
         options, invocation(ctx))


@app.command("run")
def run(ctx: typer.Context, spec: _SPEC_ARG, model: _MODEL, log_dir: _LOG_DIR, label: _LABEL = None,
        suites: _SUITES = None, agent: _AGENT = None, task_arg: _TASK_ARG = None,
        model_arg: _MODEL_ARG = None, solver_arg: _SOLVER_ARG = None, limit: _LIMIT = None,
        max_samples: _MAX_SAMPLES = None, temperature: _TEMPERATURE = None,
        max_tokens: _MAX_TOKENS = None, top_p: _TOP_P = None, seed: _SEED = None,
        max_connections: _MAX_CONNECTIONS = None) -> None:
    """Run any eval-set spec; rerun the same command to resume."""
    options = run_options(solver_arg, limit, max_samples, temperature, max_tokens, top_p, seed,
                          max_connections)
    _run(spec, model, label, log_dir, suites, agent, task_arg or [], model_arg or [], True,
         options, invocation(ctx))


@app.command("show")
def show(spec: _SPEC_ARG) -> None:
    """Validate a spec and print it resolved."""
    from rsr.report.evalset import check_spec, find_spec, load_eval_set

    path = find_spec(spec)
    loaded = load_eval_set(path)
    absent = check_spec(loaded)  # every suite built as a run would build it: names, args, tasks
    Console().print_json(loaded.model_dump_json())
    if absent:
        Console(stderr=True).print(f"valid; not on this machine (a run skips or refuses them): "
                                   f"{', '.join(absent)}", highlight=False)
