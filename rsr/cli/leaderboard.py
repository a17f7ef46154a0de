"""`rsr leaderboard ...`: validated entries from .eval logs, the static page, TB2 export."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(help="Leaderboard entries from validated .eval logs; static page; export.",
                  no_args_is_help=True)

_BOARD = Annotated[Path, typer.Option(
    "--board", help="Board folder (board.yaml, entries/, README.md).")]
_LOGS = Annotated[list[Path], typer.Argument(help=".eval logs or folders holding them.")]
DEFAULT_BOARD = Path("leaderboards")


def _validate_all(logs: list[Path], board_dir: Path, regrade: bool | None = None) -> list:
    from rsr.errors import RsrError
    from rsr.report.leaderboard import LogValidationError, load_board, validate_log
    from rsr.report.logs import find_logs

    board = load_board(board_dir)
    files = find_logs(logs)
    if not files:
        raise RsrError("no .eval logs found in " + ", ".join(map(str, logs)))
    ok, failures = [], []
    for f in files:
        try:
            ok.append(validate_log(f, board, regrade=regrade))
        except LogValidationError as e:
            failures.append(e)
    if failures:
        msg = "\n".join(str(e) for e in failures)
        raise RsrError(f"{len(failures)} of {len(files)} log(s) rejected:\n{msg}")
    # Without a pin the digest is compared only with the tasks on this machine, which whoever
    # runs the suite can edit (e.g. a TB2 copy in RSR_TASKS_HOME): say so on every use.
    for bench in sorted({v.run.benchmark for v in ok}):
        if board.config.suites[bench].digest is None:
            Console(stderr=True).print(
                f"[yellow]warning:[/yellow] suite {bench!r} is not pinned in {board.path}: its "
                f"tasks were checked only against the copy on this machine; pin it with "
                f"`rsr leaderboard pin {bench}` (suites.{bench}.digest)")
    return ok


_REGRADE = Annotated[bool | None, typer.Option(
    "--regrade/--no-regrade", help="Re-run the verifier on every sample's evidence bundle (Docker) "
    "and refuse a log whose scores it does not reproduce; default: when the board requires it.")]


@app.command()
def check(logs: _LOGS, board: _BOARD = DEFAULT_BOARD, regrade: _REGRADE = None) -> None:
    """Validate logs against the board's rules without adding anything."""
    from rsr.report.metrics import headline

    runs = _validate_all(logs, board, regrade)
    console = Console()
    for v in runs:
        m = v.run.metrics()
        i = v.integrity
        console.print(f"[green]ok[/green] {v.run.path.name}: {v.run.benchmark}, "
                      f"{m.n_tasks} tasks x {m.n_runs} epochs, mean {m.mean:.3f}; {headline(m)}; integrity "
                      f"{i.mode}: {i.clean} clean, {i.warning} warning, {i.tampered} tampered, "
                      f"{i.live_state} live-state, {i.unknown} unknown; regrade {v.regrade.status}")


@app.command()
def add(
    logs: _LOGS,
    model_name: Annotated[str, typer.Option("--model-name", help="Display name of the model.")],
    harness: Annotated[str, typer.Option("--harness", help="The agent the logs ran, e.g. "
                                         "terminus2 (= rsr/terminus2), or a name as the board's "
                                         "`harnesses:` lists it; must match every log.")],
    board: _BOARD = DEFAULT_BOARD,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite an existing entry.")
                       ] = False,
    regrade: _REGRADE = None,
) -> None:
    """Validate logs and add them as one entry (one log per suite); the logs and their bundles
    are kept under the board's logs/<entry>/ for the page to link."""
    from rsr.errors import RsrError
    from rsr.report.leaderboard import (
        build_entry,
        duplicate_problems,
        load_board,
        load_entries,
        save_entry,
        store_artifacts,
    )
    from rsr.report.metrics import headline

    runs = _validate_all(logs, board, regrade)
    cfg = load_board(board)
    entry = build_entry(runs, model_name=model_name, harness=harness, k=cfg.config.k,
                        listed=cfg.config.harnesses)
    reused = duplicate_problems(runs, load_entries(cfg.entries_dir), entry.id if replace else None, cfg.root)
    if reused:
        raise RsrError("refused: a log may back one entry only:\n" + "\n".join(f"  - {p}" for p in reused))
    if (cfg.entries_dir / f"{entry.id}.json").exists() and not replace:
        raise RsrError(f"{cfg.entries_dir / f'{entry.id}.json'} exists; pass --replace to overwrite the entry")
    store_artifacts(entry, runs, cfg)
    path = save_entry(entry, cfg.entries_dir, replace=replace)
    console = Console()
    console.print(f"added {entry.id} ({', '.join(entry.suites)}) -> {path}")
    for bench, result in entry.suites.items():
        console.print(f"  {bench}: {headline(result.metrics)}", highlight=False)


@app.command()
def build(
    out: Annotated[Path, typer.Option("--out", help="Folder for the static site.")],
    board: _BOARD = DEFAULT_BOARD,
    readme: Annotated[bool, typer.Option("--readme/--no-readme",
                                         help="Also regenerate the board's README table.")
                      ] = True,
) -> None:
    """Write the static page (sortable table, per-suite plots) and the README table."""
    from rsr.report.leaderboard import load_board, load_entries
    from rsr.report.site import build_site, update_readme

    cfg = load_board(board)
    entries = load_entries(cfg.entries_dir)
    page = build_site(entries, out, title=cfg.config.title, k=cfg.config.k,
                      test_board=cfg.config.test_board, board_root=cfg.root)
    console = Console()
    console.print(f"wrote {page} ({len(entries)} entries)")
    if readme:
        update_readme(cfg.root / "README.md", entries, k=cfg.config.k)
        console.print(f"updated {cfg.root / 'README.md'}")


@app.command()
def pin(
    suite: Annotated[str, typer.Argument(help="Suite on the board, e.g. core or tb2.")],
    board: _BOARD = DEFAULT_BOARD,
) -> None:
    """Print the digest of a suite's tasks on disk (for `digest:` in board.yaml)."""
    from rsr.errors import RsrError
    from rsr.report.leaderboard import load_board, task_set_digest

    cfg = load_board(board)
    if suite not in cfg.config.suites:
        raise RsrError(f"suite {suite!r} is not in {cfg.path}")
    tasks = cfg.suite_tasks(suite)
    print(task_set_digest((n, t.digest) for n, t in tasks.items()))


@app.command()
def export(
    logs: _LOGS,
    out: Annotated[Path, typer.Option("--out", help="Where submissions/ is written.")],
    agent_name: Annotated[str, typer.Option("--agent-name", help="Agent id, e.g. terminus-2.")],
    agent_url: Annotated[str, typer.Option("--agent-url")],
    agent_display_name: Annotated[str, typer.Option("--agent-display-name")],
    agent_org: Annotated[str, typer.Option("--agent-org", help="agent_org_display_name")],
    model_display_name: Annotated[str, typer.Option("--model-display-name")],
    model_org: Annotated[str, typer.Option("--model-org", help="model_org_display_name")],
    fmt: Annotated[str, typer.Option("--format", help="Only terminal-bench.")
                   ] = "terminal-bench",
    agent_version: Annotated[str, typer.Option("--agent-version")] = "rsr",
    board: _BOARD = DEFAULT_BOARD,
) -> None:
    """Export validated logs as a Terminal-Bench 2 leaderboard submission."""
    from rsr.errors import RsrError
    from rsr.report.tbexport import (
        ModelInfo,
        SubmissionMetadata,
        export_terminal_bench,
        split_model,
    )

    if fmt != "terminal-bench":
        raise RsrError(f"--format {fmt!r}: only 'terminal-bench' is supported")
    runs = _validate_all(logs, board)
    console = Console()
    models = {v.run.model for v in runs}
    if len(models) != 1:
        raise RsrError(f"logs come from several models {sorted(models)}; export one at a time")
    for v in runs:
        if v.run.benchmark not in {"tb2", "tb2_1"}:
            console.print(f"[yellow]warning:[/yellow] {v.run.path.name} is suite "
                          f"{v.run.benchmark!r}; the TB2 board accepts only Terminal-Bench 2")
    provider, name = split_model(models.pop())
    meta = SubmissionMetadata(
        agent_url=agent_url, agent_display_name=agent_display_name,
        agent_org_display_name=agent_org,
        models=[ModelInfo(model_name=name, model_provider=provider,
                          model_display_name=model_display_name,
                          model_org_display_name=model_org)])
    root = export_terminal_bench(runs, out, metadata=meta, agent_name=agent_name,
                                 agent_version=agent_version)
    console.print(f"wrote {root}")
