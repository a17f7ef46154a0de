"""`rsr tasks ...`: lint, fetch, check and scaffold task directories."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="Lint, fetch, check and scaffold terminal tasks.", no_args_is_help=True)


@app.command()
def lint(
    paths: list[Path] = typer.Argument(..., help="Task directories or folders holding them."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array, one object per task."),
    warnings: bool = typer.Option(True, "--warnings/--no-warnings", help="Show warnings (unknown keys...)."),
    network: str = typer.Option("task", "--network",
                                help="Run policy to show: 'task' (each task's own setting) or 'none'."),
    differences: bool = typer.Option(True, "--differences/--no-differences",
                                     help="Show what would run differently than under Harbor 0.26."),
) -> None:
    """Load every task below PATH statically (no Docker, no network); exit 1 if any is invalid.

    Per task it prints the network the task gets under the run policy and every way it would run
    differently under rsr than under Harbor 0.26 (nothing, for supported features)."""
    from rich.markup import escape

    from rsr.errors import DatasetLoadError, TaskFormatError
    from rsr.sandbox.compose import compose_differences
    from rsr.tasks.host_fit import host_fit, no_task_here
    from rsr.tasks.load import find_task_dirs, load_task

    if network not in ("task", "none"):
        raise typer.BadParameter("expected 'task' or 'none'", param_hint="--network")
    rows: list[dict] = []
    for root in paths:
        if not root.exists():
            rows.append({"path": str(root), "name": root.name, "format": None, "status": "invalid",
                         "category": None, "difficulty": None, "warnings": [], "network": None,
                         "harbor_differences": [],
                         "errors": [{"file": str(root), "field": None, "message": "path does not exist"}]})
            continue
        task_dirs = find_task_dirs(root)
        if not task_dirs:  # say why, not just "0 task(s)"
            rows.append({"path": str(root), "name": root.name, "format": None, "status": "invalid",
                         "category": None, "difficulty": None, "warnings": [], "network": None,
                         "harbor_differences": [],
                         "errors": [{"file": str(root), "field": None, "message": no_task_here(root)}]})
        for task_dir in task_dirs:
            fmt = "harbor" if (task_dir / "task.toml").is_file() else "terminal-bench-1"
            row = {"path": str(task_dir), "name": task_dir.name, "format": fmt, "status": "ok",
                   "category": None, "difficulty": None, "errors": [], "warnings": [], "network": None,
                   "harbor_differences": []}
            try:
                task = load_task(task_dir)
                internet = network == "task" and task.config.environment.allow_internet
                row.update(category=task.config.category, difficulty=task.config.difficulty,
                           warnings=list(task.warnings), full_name=task.full_name,
                           network="internet" if internet else "none", network_policy=network,
                           parser=task.parser_name,
                           harbor_differences=task.harbor_differences() + compose_differences(task))
                fit = host_fit(task)  # valid, but cannot run (here): CRLF, relative workdir, USER...
                row["warnings"] += fit.warnings
                if fit.errors:
                    row.update(status="invalid", errors=[{"file": f, "field": k, "message": m}
                                                         for f, k, m in fit.errors])
            except TaskFormatError as e:
                row.update(status="invalid", errors=[e.to_dict()])
            except DatasetLoadError as e:
                row.update(status="invalid", errors=[x.to_dict() for x in e.errors])
            rows.append(row)
    invalid = [r for r in rows if r["status"] != "ok"]
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        console = Console(soft_wrap=True)
        for r in rows:
            status = "[green]ok[/green]" if r["status"] == "ok" else "[red]invalid[/red]"
            console.print(f"{r['name']:<36} {r['format'] or '-':<17} {r['category'] or '-':<22} "
                          f"{r['difficulty'] or '-':<7} net:{r['network'] or '-':<9} {status}", highlight=False)
            for e in r["errors"]:
                field = f" [{e['field']}]" if e.get("field") else ""
                console.print(f"    [red]error[/red] {escape(e['file'] + field)}: {escape(e['message'])}",
                              highlight=False)
            if warnings:
                for w in r["warnings"]:
                    console.print(f"    [yellow]warning[/yellow] {escape(w)}", highlight=False)
            if differences:
                for d in r["harbor_differences"]:
                    console.print(f"    [cyan]differs from Harbor[/cyan] {escape(d)}", highlight=False)
        differing = sum(1 for r in rows if r["harbor_differences"])
        console.print(f"{len(rows)} task(s), {len(invalid)} invalid, {differing} would run differently than "
                      f"under Harbor; network policy: {network}")
    if invalid or not rows:
        raise typer.Exit(1)


@app.command()
def fetch(
    suite: str = typer.Argument(..., help="A suite with a public source: tb2, tb2_1, tb3, tb4, lhtb."),
    dest: Path | None = typer.Option(None, "--dest", help="Where to put it (default: the suite cache)."),
    git_url: str | None = typer.Option(None, "--git-url", help="Fetch the pinned commit from this mirror instead "
                                       "(git suites)."),
    source: str | None = typer.Option(None, "--source", help="Fetch from this source instead: a git mirror (tb2) "
                                      "or, for a Harbor hub suite, a Harbor git-repo registry (`harbor download "
                                      "--repo`) holding the dataset; default $RSR_SUITE_SOURCE_<SUITE>."),
    repin: bool = typer.Option(False, "--repin", help="Accept a copy whose digests differ from the copy fetched "
                               "before at the same ref (records the new digests)."),
) -> None:
    """Fetch a suite's pinned version (git checkout, or Harbor's own `harbor download` for hub
    datasets), verify its digest where one is pinned, and record tool, source, ref and digests."""
    from rsr.sandbox.gpu import NEEDS_GPU, needs_gpu
    from rsr.suites.registry import PIN_RECORD, fetch_suite
    from rsr.tasks.load import load_dataset

    with Console().status(f"fetching {suite}"):
        root, pin = fetch_suite(suite, dest=dest, git_url=git_url, source=source, repin=repin)
    tasks = load_dataset(root).tasks
    gpu = [t.name for t in tasks if needs_gpu(t)]
    record = next((d / PIN_RECORD for d in (root, root.parent) if (d / PIN_RECORD).is_file()), None)
    Console().print(f"{suite}: {len(tasks)} task(s) in {root}"
                    + (f" ({len(gpu)} {NEEDS_GPU}: {', '.join(gpu)})" if gpu else "")
                    + f"\n  tool {pin.tool}, source {pin.source}, ref {pin.ref}\n  tasks digest {pin.digest}"
                    + f"\n  recorded in {record}",
                    highlight=False)


@app.command()
def check(
    target: str = typer.Argument(..., help="A suite name (core) or a path to tasks."),
    tasks: str | None = typer.Option(None, "--tasks", "-t", help="Only tasks matching these globs (comma-separated)."),
    exclude: str | None = typer.Option(None, "--exclude", "-x", help="Skip tasks matching these globs."),
    runs: int = typer.Option(3, "--runs", min=1, help="Oracle runs per task; every run must pass."),
    only: str | None = typer.Option(None, "--only",
                                    help="Comma-separated subset of: build,oracle,null,partial,isolation,leak."),
    log_dir: str = typer.Option("logs/tasks-check", "--log-dir", help="Where Inspect writes the .eval logs."),
    max_sandboxes: int | None = typer.Option(None, "--max-sandboxes", min=1,
                                             help="Concurrent sandboxes (Inspect default: 2 x CPUs)."),
    json_out: Path | None = typer.Option(None, "--json-out", help="Also write the report as JSON."),
) -> None:
    """Quality gate in real Docker sandboxes: oracle passes every run, null and a partial oracle
    fail, tests and solution stay hidden, network off unless allowed, and (leak) the deliverable
    can read neither the tests nor the checker's expected outputs. Exit 1 on any finding."""
    from rsr.suites.check import CHECKS, check_tasks

    # Logs and CI have no terminal width; keep the table readable there.
    console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    selected = tuple(c.strip() for c in only.split(",")) if only else CHECKS
    unknown = set(selected) - set(CHECKS)
    if unknown:
        raise typer.BadParameter(f"unknown check(s): {', '.join(sorted(unknown))}", param_hint="--only")
    with console.status("checking tasks") as status:
        reports = check_tasks(target, tasks, exclude, runs=runs, checks=selected, log_dir=log_dir,
                              max_sandboxes=max_sandboxes, progress=lambda m: status.update(m))
    if not reports:
        from rsr.errors import RsrError
        from rsr.suites.check import resolve_target
        from rsr.tasks.host_fit import no_task_here

        filters = " ".join(f"{k} {v!r}" for k, v in (("--tasks", tasks), ("--exclude", exclude)) if v)
        if filters:
            raise RsrError(f"no task of {target} matches {filters} (`rsr tasks lint {target}` lists them)")
        raise RsrError(no_task_here(resolve_target(target)))
    table = Table("task", "oracle", "null", "partial", "build s", "image MB", "oracle s", "result")
    for r in sorted(reports, key=lambda r: r.name):
        table.add_row(
            r.name,
            f"{sum(r.oracle_passes)}/{len(r.oracle_passes)}" if r.oracle_passes else "-",
            "-" if r.null_passed is None else ("PASSED" if r.null_passed else "failed"),
            "-" if r.partial_passed is None else ("PASSED" if r.partial_passed else "failed"),
            "-" if r.build_sec is None else f"{r.build_sec:.1f}",
            "-" if r.image_mb is None else f"{r.image_mb:.0f}",
            "-" if r.oracle_sec is None else f"{r.oracle_sec:.1f}",
            "[green]ok[/green]" if r.ok else "[red]FAIL[/red]",
        )
    console.print(table)
    for r in reports:
        for line in r.seen():
            console.print(f"{r.name}: {line}", highlight=False)
        for f in r.findings:
            console.print(f"[red]{r.name}[/red]: {f}", highlight=False)
        for w in r.warnings:
            console.print(f"[yellow]{r.name}[/yellow] (warning): {w}", highlight=False)
    if json_out:
        json_out.write_text(json.dumps([r.to_dict() for r in reports], indent=2))
    bad = [r for r in reports if not r.ok]
    console.print(f"{len(reports)} task(s) checked, {len(bad)} with findings")
    if bad or not reports:
        raise typer.Exit(1)


@app.command("infer-deliverables")
def infer_deliverables(
    target: str = typer.Argument(..., help="A suite name (tb2, ...) or a path to tasks."),
    tasks: str | None = typer.Option(None, "--tasks", "-t", help="Only tasks matching these globs (comma-separated)."),
    out: Path | None = typer.Option(None, "--out", help="The file to merge the records into (default: rsr's "
                                    "cache, deliverables/<suite or folder>.json, where strict mode looks)."),
    max_trials: int = typer.Option(24, "--max-trials", min=1,
                                   help="Test runs per task to prune roots the tests do not need."),
    log_dir: str = typer.Option("logs/infer-deliverables", "--log-dir", help="Where Inspect writes the .eval log."),
    max_sandboxes: int | None = typer.Option(None, "--max-sandboxes", min=1, help="Concurrent sandboxes."),
) -> None:
    """Infer the deliverables of tasks that declare none, from their reference solutions run in
    Docker: what strict mode (`-T integrity=strict`) carries to their checker. Records are keyed
    by task digest; review them before trusting a board to them (README: Verifier)."""
    from rsr.suites.infer import infer_deliverables as infer

    console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    with console.status("inferring deliverables") as status:
        path, found = infer(target, tasks=tasks, out=out, max_trials=max_trials, log_dir=log_dir,
                            max_sandboxes=max_sandboxes, progress=lambda m: status.update(m))
    table = Table("task", "status", "roots beside the workdir", "pruned", "trials")
    for f in sorted(found, key=lambda f: f.name):
        table.add_row(f.name, f.status, "\n".join(f.roots) or "-", str(len(f.pruned)), str(f.trials))
    console.print(table)
    for f in sorted(found, key=lambda f: f.name):
        if f.note:  # a flaky or failing reference (which tests), the policy of a task without one
            console.print(f"{f.name}: {f.note}", highlight=False, markup=False)
    console.print(f"{len(found)} task(s) written to {path}", highlight=False)
    if any(f.status == "reference-failed" for f in found):
        raise typer.Exit(1)


USER_TASKS = Path("my-tasks")
"""Where `rsr tasks new` writes by default: a folder no suite reads (`rsr/core` is `./tasks/core`),
so a new task joins a suite only when the user puts it there (`--root tasks/core`)."""


@app.command()
def new(
    name: str = typer.Argument(..., help="Task name (kebab-case), or a path whose last part is "
                               "the name (e.g. ~/tasks/word-counts)."),
    category: str = typer.Option("software-engineering", "--category", "-c", help="Task category."),
    difficulty: str = typer.Option("medium", "--difficulty", "-d", help="easy, medium or hard."),
    milestones: bool = typer.Option(False, "--milestones", help="Long-horizon scaffold with named milestones."),
    root: Path = typer.Option(USER_TASKS, "--root", help="Folder to create the task in (default "
                              "./my-tasks, part of no suite; --root tasks/core adds it to core)."),
) -> None:
    """Scaffold a complete task (instruction, task.toml, Dockerfile, tests, solution)."""
    from rsr.tasks.scaffold import scaffold_task

    given = Path(name).expanduser()
    if len(given.parts) > 1:
        root, name = given.parent, given.name
    task_dir = scaffold_task(root, name, category, difficulty, milestones)
    Console().print(f"created {task_dir}\nnext: edit it, then `rsr tasks lint {task_dir}`, "
                    f"`rsr tasks check {task_dir}` and `inspect eval rsr/harbor -T path={task_dir} "
                    "--solver rsr/oracle`", highlight=False)


@app.command()
def catalog(
    root: Path = typer.Argument(Path("tasks/core"), help="Suite directory."),
    check_only: bool = typer.Option(False, "--check", help="Exit 1 if the README table is out of date."),
) -> None:
    """Regenerate the task table in ROOT/README.md (category, difficulty, milestones, description)."""
    from rsr.tasks.catalog import write_catalog

    readme = root / "README.md"
    before = readme.read_text() if readme.is_file() else ""
    write_catalog(root)
    if check_only and readme.read_text() != before:
        readme.write_text(before) if before else readme.unlink()
        Console().print(f"[red]{readme} is out of date[/red]: run `rsr tasks catalog {root}`")
        raise typer.Exit(1)
    Console().print(f"wrote {readme}")


@app.command()
def shell(
    task: str = typer.Argument(..., help="A task directory, or the name of a core task."),
    oracle: bool = typer.Option(False, "--oracle", help="Run the reference solution first."),
    tests: bool = typer.Option(False, "--tests", help="Run the hidden tests after the shell exits "
                               "(the real verifier; prints its result)."),
    keep: bool = typer.Option(False, "--keep", help="Keep the container (named on exit) instead of "
                              "removing it."),
    network: str = typer.Option("task", "--network", help="task (its own setting) or none."),
    log_dir: str = typer.Option("logs/shell", "--log-dir", help="Where Inspect writes the .eval log."),
) -> None:
    """Open an interactive shell in a task's environment, as its agent sees it (no tests or
    solution inside); the sandbox is removed when the shell exits."""
    from rsr.suites.shell import open_shell

    result = open_shell(task, run_oracle=oracle, run_tests=tests, keep=keep, network=network,
                        log_dir=log_dir)
    if tests:
        Console().print(f"verifier: {result}", highlight=False)
