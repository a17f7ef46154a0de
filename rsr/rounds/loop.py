"""`rsr rounds CONFIG`: R rounds of factory -> train -> evaluate, each round's model serving the
next round's policy roles.

    <output_dir>/
      ledger.jsonl, ledger.md, pass_rate.png   one row per finished round
      round-N/factory.yaml                     the round's factory config (as run)
      round-N/factory/                         the factory's own output (ledger, export, report)
      round-N/train.yaml, round-N/train/       the round's recipe and training run
      round-N/eval/                            the evaluation's Inspect logs
      round-N/state.json                       the stages of the round that finished

Resumable at every level: a round in the ledger is skipped; inside a round, a finished stage
is skipped (the factory resumes by its own ledger, training by its run card, the evaluation
by Inspect's eval set).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from rsr.factory import pipeline as factory_pipeline
from rsr.factory.config import FactoryConfig
from rsr.factory.ledger import FactoryPaths, State
from rsr.rounds.config import RoundsConfig, eval_task_dirs, factory_template
from rsr.rounds.evaluate import evaluate
from rsr.rounds.factory_round import round_factory, write_round_factory
from rsr.rounds.ledger import EvalFigures, RoundRow, RoundState, append, plot, read_ledger, render
from rsr.rounds.serve import Servers, preflight
from rsr.rounds.train import TrainResult, train_round


class Paths:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ledger = root / "ledger.jsonl"

    def round(self, n: int) -> Path:
        return self.root / f"round-{n}"


@contextmanager
def _line(console: Console, n: int, stage: str) -> Iterator[dict[str, str]]:
    """One line per stage: what it did, with its elapsed time."""
    started = time.monotonic()
    result = {"summary": ""}
    console.print(f"[bold]round {n}[/bold] {stage} …")
    yield result
    console.print(f"[bold]round {n}[/bold] [green]{stage}[/green]: {result['summary']} "
                  f"({time.monotonic() - started:.0f} s)")


def _refused(rows: dict[str, int]) -> str:
    return ", ".join(f"{v} {k} row(s)" for k, v in rows.items() if v) or "0 rows"


def _served_name(cfg: RoundsConfig, trained_in: int) -> str:
    return f"{cfg.name}-r{trained_in}"


def _factory_summary(fc: FactoryConfig) -> dict[str, Any]:
    status = factory_pipeline.status(fc)
    state = State.load(FactoryPaths(fc.output_dir).state_file)
    export = state.notes.get("export", {})
    costs = state.costs
    funnel = status["funnel"]
    return {
        "rollouts": {stage: int(c.get("rollouts", 0)) for stage, c in costs.items()
                     if c.get("rollouts")},
        "sources": int(funnel.get("sources", 0)), "executions": int(funnel.get("executions", 0)),
        "kept": int(funnel.get("kept", 0)), "rows": int(export.get("rows", 0)),
        "refused_rows": {k: int(v) for k, v in export.get("refused_rows", {}).items()},
        "refused_tasks": dict(export.get("refused", {})),
        "guard_checked": dict(export.get("checked_eval", {})),
        "tokens": int(sum(c.get("tokens", 0) for c in costs.values())),
        "sandbox_minutes": round(sum(c.get("sandbox_seconds", 0.0) for c in costs.values()) / 60,
                                 2),
    }


def run_round(cfg: RoundsConfig, n: int, model_in: str | None, name_in: str | None,
              previous: RoundRow | None, console: Console, servers: Servers) -> RoundRow:
    paths = Paths(cfg.output_dir)
    rdir = paths.round(n)
    state = RoundState(rdir / "state.json")
    started = time.monotonic() - float(state.get("wall_s") or 0.0)
    template = factory_template(cfg)
    evaluated = eval_task_dirs(cfg)
    fdir = rdir / "factory"

    summary = state.get("factory")
    if summary is None:
        with _line(console, n, "factory") as line:
            served = None
            if model_in is not None:
                assert name_in is not None
                served = servers.get(model_in, name_in)
            fc = round_factory(cfg, template, fdir, evaluated, served)
            write_round_factory(fc, rdir / "factory.yaml")
            factory_pipeline.run(fc, console=console)
            summary = _factory_summary(fc)
            summary["weights_sha256"] = served.weights_sha256 if served else None
            summary["engine"] = served.engine if served else None
            state.done("factory", summary)
            refused = (f"; guard refused {_refused(summary['refused_rows'])} of "
                       f"{', '.join(sorted(summary['refused_tasks']))}"
                       if summary["refused_tasks"] else "; guard refused nothing")
            line["summary"] = (f"{sum(summary['rollouts'].values())} rollouts by "
                               f"{served.model if served else 'the factory config models'}, "
                               f"{summary['sources']} sources, {summary['kept']} kept, "
                               f"{summary['rows']} rows{refused}")

    trained = state.get("train")
    if trained is None:
        exports = [paths.round(k) / "factory" / "dataset.jsonl" for k in range(1, n + 1)]
        servers.close()  # training needs the machine's cores and memory
        with _line(console, n, f"train ({cfg.train.method})") as line:
            result = train_round(cfg, n, model_in, exports, evaluated,
                                 rdir / "train", console)
            trained = asdict(result)
            trained["served_as"] = _served_name(cfg, n) if result.trained else name_in
            state.done("train", trained)
            line["summary"] = (f"{result.note} -> {result.model_out}" + (
                f"; loss {result.metrics['train_loss_start']:.3f} -> "
                f"{result.metrics['train_loss_end']:.3f}"
                if result.metrics.get("train_loss_end") is not None else ""))
    train = TrainResult(**{k: v for k, v in trained.items() if k != "served_as"})

    figures = state.get("eval")
    if figures is None:
        with _line(console, n, "eval") as line:
            if not train.trained and previous is not None and previous.model_out == train.model_out:
                figures = previous.eval.model_copy(update={"reused_from": previous.round}
                                                   ).model_dump()
                line["summary"] = f"same model as round {previous.round}: its evaluation reused"
            else:
                # Kept running: the next round's factory serves this checkpoint too.
                served = servers.get(train.model_out, trained["served_as"])
                result = evaluate(cfg, served, rdir / "eval", label=f"{cfg.name}-round-{n}")
                figures = EvalFigures(passed=result.passed, n=result.n, errors=result.errors,
                                      pass_rate=result.pass_rate, logs=result.logs,
                                      engine=served.engine,
                                      weights_sha256=served.weights_sha256).model_dump()
                line["summary"] = (f"{served.model}: {result.passed}/{result.n} passed"
                                   f" ({result.errors} errored)")
            state.done("eval", figures)
    wall = time.monotonic() - started
    state.done("wall_s", wall)
    return RoundRow(
        round=n, model_in=model_in or "factory config models",
        model_in_served_as=f"rsr-vllm/{name_in}" if name_in else None,
        model_in_sha256=summary.get("weights_sha256"), model_in_engine=summary.get("engine"),
        model_out=train.model_out, model_out_served_as=trained["served_as"],
        trained=train.trained, train_note=train.note,
        rollouts=summary["rollouts"], sources=summary["sources"],
        executions=summary["executions"], kept=summary["kept"], rows=summary["rows"],
        training_rows=train.rows, refused_rows=summary["refused_rows"],
        refused_tasks=summary["refused_tasks"], guard_checked=summary["guard_checked"],
        tokens=summary["tokens"], sandbox_minutes=summary["sandbox_minutes"],
        train=train.metrics, eval=EvalFigures.model_validate(figures), wall_s=round(wall, 1),
        factory_dir=str(fdir))


def _note_config_change(cfg: RoundsConfig, paths: Paths, console: Console) -> None:
    """Finished rounds are kept whatever the config says now; say so when it changed."""
    marker = paths.root / "config_digest"
    before = marker.read_text().strip() if marker.is_file() else None
    if before == cfg.digest():
        return
    if before is not None:
        console.print(f"[yellow]note:[/yellow] the rounds config changed since the last run of "
                      f"{paths.root}; rounds in the ledger are kept as they were run, stages "
                      "done inside a round are reused")
    paths.root.mkdir(parents=True, exist_ok=True)
    marker.write_text(cfg.digest() + "\n")


def run(cfg: RoundsConfig, console: Console | None = None) -> list[RoundRow]:
    console = console or Console()
    paths = Paths(cfg.output_dir)
    rows = read_ledger(paths.ledger)
    engine = preflight(cfg) if len(rows) < cfg.rounds else None
    if engine is not None:
        console.print(f"[dim]engine:[/dim] {engine} serves each round's checkpoint")
    _note_config_change(cfg, paths, console)
    model: str | None = cfg.first_model
    name: str | None = _served_name(cfg, 0) if model else None
    with Servers(cfg.serve, paths.root / "engine",
                 lambda text: console.print(f"[dim]engine:[/dim] {text}")) as servers:
        for n in range(1, cfg.rounds + 1):
            done = next((r for r in rows if r.round == n), None)
            if done is not None:
                console.print(f"[bold]round {n}[/bold]: in the ledger, skipped "
                              f"(pass {done.eval.passed}/{done.eval.n})")
            else:
                done = run_round(cfg, n, model, name, rows[-1] if rows else None, console,
                                 servers)
                append(paths.ledger, done)
                rows.append(done)
            model, name = done.model_out, done.model_out_served_as
    md = render(rows, paths.root / "ledger.md", cfg.name)
    plot(rows, paths.root / "pass_rate.png", cfg.name)
    console.print(f"ledger: {paths.ledger} ({md})")
    return rows


def status(cfg: RoundsConfig) -> dict[str, Any]:
    paths = Paths(cfg.output_dir)
    rows = {r.round: r for r in read_ledger(paths.ledger)}
    out: dict[str, Any] = {"output_dir": str(cfg.output_dir), "rounds": cfg.rounds, "done": [],
                           "rounds_detail": {}}
    for n in range(1, cfg.rounds + 1):
        if n in rows:
            r = rows[n]
            out["done"].append(n)
            out["rounds_detail"][n] = {"finished": True, "model_out": r.model_out,
                                       "rows": r.rows, "refused_rows": r.refused_rows,
                                       "pass": f"{r.eval.passed}/{r.eval.n}"}
            continue
        state = RoundState(paths.round(n) / "state.json")
        out["rounds_detail"][n] = {"finished": False,
                                   "stages_done": [s for s in ("factory", "train", "eval")
                                                   if state.get(s) is not None]}
    out["next"] = next((n for n in range(1, cfg.rounds + 1) if n not in rows), None)
    return out
