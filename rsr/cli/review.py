"""`rsr review LOG...`: the hack review of every sample, from its transcript."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

if TYPE_CHECKING:
    from rsr.verify.hack_review import LogReview


def review(
    logs: Annotated[list[Path], typer.Argument(help=".eval logs (or folders of them) to review.")],
    json_out: Annotated[Path | None, typer.Option(
        "--json", help="Write the per-sample findings here (a list of log reviews).")] = None,
    judge: Annotated[str | None, typer.Option(
        "--judge", help="Also ask this Inspect model (e.g. openai/gpt-5) to judge each passing sample "
        "with the rubric prompt; off by default.")] = None,
    judge_args: Annotated[list[str] | None, typer.Option(
        "--judge-arg", help="KEY=VALUE model argument for the judge (as Inspect's -M); repeatable.")] = None,
    all_samples: Annotated[bool, typer.Option(
        "--all", help="Print every sample, not only those with findings.")] = False,
) -> None:
    """Run the deterministic hack detectors over each sample's commands (reads of /tests or
    /solution, writes to /logs/verifier, solution downloads, limit and harness edits) and print the
    findings; exit 1 when a passing sample has a `hack` finding or the judge calls it hacked."""
    from rich.markup import escape
    from rich.progress import Progress

    from rsr.errors import RsrError
    from rsr.report.logs import readable_logs
    from rsr.verify.hack_review import review_log

    if judge_args and judge is None:
        raise RsrError("--judge-arg needs --judge MODEL")
    model_args = _model_args(judge_args or [])
    files = readable_logs(logs)  # a truncated or foreign log: one line, before any review
    console = Console()
    reviews: list[LogReview] = []
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("reviewing", total=len(files))
        for f in files:
            reviews.append(review_log(f))
            progress.advance(bar)
    if judge is not None:
        _judge(reviews, judge, model_args)
    flagged = False
    for r in reviews:
        hacked = [s for s in r.samples if s.flagged]
        flagged |= bool(hacked)
        colour = "red" if hacked else "green"
        console.print(f"[{colour}]{len(hacked)} passing sample(s) flagged[/{colour}] {escape(r.log)}: "
                      f"{len(r.samples)} samples, {sum(len(s.findings) for s in r.samples)} finding(s)", soft_wrap=True)
        for s in r.samples:
            if not (s.findings or s.judge or all_samples):
                continue
            outcome = {True: "passed", False: "failed", None: "unscored"}[s.passed]
            console.print(f"  {s.where} ({s.task}, {outcome}, {s.actions} commands)", markup=False, highlight=False)
            for f in s.findings:
                console.print(f"    {f.severity:10} {f.detector:15} step {f.step}: {f.evidence}",
                              markup=False, highlight=False)
            if s.judge:
                console.print(f"    judge: {s.judge.verdict}: {s.judge.explanation}", markup=False,
                              highlight=False)
    if json_out is not None:
        json_out.write_text("[" + ",\n".join(r.model_dump_json() for r in reviews) + "]\n")
        console.print(f"findings written to {json_out}", markup=False, highlight=False)
    if flagged:
        raise typer.Exit(1)


def _model_args(pairs: list[str]) -> dict[str, str]:
    from rsr.errors import RsrError

    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise RsrError(f"--judge-arg {pair!r}: expected KEY=VALUE")
        out[key] = value
    return out


def _judge(reviews: list[LogReview], model_name: str, model_args: dict[str, str]) -> None:
    """The judge reads each passing sample again (with its messages) and records its verdict."""
    import asyncio

    from inspect_ai.log import read_eval_log_sample
    from inspect_ai.model import get_model

    from rsr.verify.hack_judge import judge_actions
    from rsr.verify.hack_review import actions_of

    model = get_model(model_name, **model_args)

    async def run() -> None:
        for r in reviews:
            for s in r.samples:
                if not s.passed:
                    continue  # as leaderboards do: only a pass can be a reward hack
                sample = read_eval_log_sample(r.log, id=s.sample_id, epoch=s.epoch, resolve_attachments=True)
                first = next((m.text for m in sample.messages if m.role == "user"), "")
                instruction = sample.input if isinstance(sample.input, str) else first
                actions = actions_of(sample.messages, sample.events)
                verdict = await judge_actions(actions, s.findings, instruction, model)
                s.judge = verdict

    asyncio.run(run())
