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
    from rsr.report.logs import readable_logs, superseded

    board = load_board(board_dir)
    files = readable_logs(logs)
    # A resumed run's folder keeps the killed run's unfinished log: the finished one counts.
    for path, note in superseded(files).items():
        files.remove(path)
        Console(stderr=True).print(f"note: {note}", highlight=False, markup=False)
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
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the board file as it would be written; write nothing.")] = False,
) -> None:
    """Pin a suite: write the digest of its tasks on disk into board.yaml (suites.SUITE.digest)
    and print it."""
    from rsr.errors import RsrError
    from rsr.report.leaderboard import load_board, task_set_digest

    cfg = load_board(board)
    if suite not in cfg.config.suites:
        raise RsrError(f"suite {suite!r} is not in {cfg.path} (its suites: {', '.join(cfg.config.suites)}); "
                       f"add `{suite}: {{}}` under `suites:` first")
    tasks = cfg.suite_tasks(suite)
    digest = task_set_digest((n, t.digest) for n, t in tasks.items())
    text = pinned_text(cfg.path.read_text(encoding="utf-8"), suite, digest)
    if dry_run:
        print(text, end="")
        return
    tmp = cfg.path.with_name(f".{cfg.path.name}.pin")
    tmp.write_text(text, encoding="utf-8")
    try:
        load_board(tmp)  # the edited file must still be a valid board before it replaces the old one
    except RsrError:
        tmp.unlink()
        raise RsrError(f"{cfg.path}: could not add suites.{suite}.digest to it without breaking it; "
                       f"add `digest: {digest}` under suites.{suite} by hand") from None
    tmp.replace(cfg.path)
    print(digest)
    Console(stderr=True).print(f"pinned: wrote suites.{suite}.digest to {cfg.path}", highlight=False)


def pinned_text(text: str, suite: str, digest: str) -> str:
    """board.yaml with suites.SUITE.digest set, its comments and layout kept (a line edited or
    added in the suite's block); a flow-style entry is rewritten in block style."""
    import re

    lines = text.splitlines(keepends=True)
    in_suites, start, indent = False, None, ""
    for i, line in enumerate(lines):
        if re.match(r"^suites:\s*(#.*)?$", line):
            in_suites = True
            continue
        if in_suites and line.strip() and not line.startswith((" ", "\t")):
            break  # the next top-level key
        found = re.match(rf"^(\s+){re.escape(suite)}:\s*(.*?)\s*$", line) if in_suites else None
        if found:
            start, indent = i, found.group(1)
            rest = found.group(2)
            if rest.startswith("{"):  # `tb4: {}` or `tb4: {path: x}`: block style, then the digest
                import json

                import yaml

                inner = yaml.safe_load(rest) or {}
                inner["digest"] = digest
                # JSON is YAML's flow style: each value on its one line, quoted where it must be.
                block = "".join(f"{indent}  {k}: {json.dumps(v)}\n" for k, v in inner.items())
                return "".join(lines[:i]) + f"{indent}{suite}:\n" + block + "".join(lines[i + 1:])
            break
    if start is None:
        raise ValueError(f"suite {suite} not found under suites:")
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(indent + " ")):
        if re.match(rf"^{indent}\s+digest:", lines[end]):
            child = lines[end][:len(lines[end]) - len(lines[end].lstrip())]
            lines[end] = f"{child}digest: '{digest}'\n"
            return "".join(lines)
        end += 1
    child = next((ln[:len(ln) - len(ln.lstrip())] for ln in lines[start + 1:end] if ln.strip()), indent + "  ")
    lines.insert(start + 1, f"{child}digest: '{digest}'\n")
    return "".join(lines)


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
