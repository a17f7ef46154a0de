"""Running the factory: stages in order, resumable, with budgets and a progress display."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from rsr.errors import RsrError
from rsr.factory import compress, discover, execute, export, plan, report
from rsr.factory import filter as filter_stage
from rsr.factory.config import STAGES, FactoryConfig
from rsr.factory.ledger import FactoryPaths, StageCost, State, budget_left, check_models, unfinished_samples
from rsr.factory.provenance import stage_fingerprints
from rsr.factory.records import Decision, Runbook, read_rows

PREREQUISITES = {"compress": "rollouts", "plan": "sources", "execute": "runbooks",
                 "filter": "executions", "export": "decisions"}


def _cost_dict(cost: StageCost) -> dict[str, float]:
    return {k: float(v) for k, v in asdict(cost).items()}


def _check_inputs(paths: FactoryPaths, stage: str) -> None:
    needed = PREREQUISITES.get(stage)
    if needed and not paths.stage_file(needed).is_file():
        previous = STAGES[STAGES.index(stage) - 1]
        raise RsrError(f"stage {stage} needs {paths.stage_file(needed)}; run "
                       f"`rsr factory run CONFIG --stage {previous}` (or all stages) first")


def run_stage(cfg: FactoryConfig, paths: FactoryPaths, state: State, stage: str,
              console: Console) -> str:
    """Run one stage; returns a one-line summary."""
    _check_inputs(paths, stage)
    if stage == "discover":
        left, exhausted = budget_left(cfg, state)
        if exhausted:
            return f"skipped: {exhausted}"
        cost = discover.run(cfg, paths, max_rollouts=left)
        state.costs["discover"] = _cost_dict(cost)
        return f"{int(cost.rollouts)} rollouts in the ledger"
    if stage == "compress":
        sources = compress.run(paths)
        dropped = sum(len(s.dropped) for s in sources)
        return (f"{len(sources)} sources; {dropped} source-harness control messages removed or "
                "stripped")
    if stage == "plan":
        cost = plan.run(cfg, paths)
        state.costs["plan"] = _cost_dict(cost)
        rows = read_rows(paths.stage_file("runbooks"), Runbook)
        return f"{sum(r.accepted for r in rows)}/{len(rows)} runbooks accepted"
    if stage == "execute":
        schedule = execute.run(cfg, paths, state)
        state.costs["execute"] = _cost_dict(execute.cost(paths))
        state.notes["adaptive"] = {"m": cfg.execute.m, "planned": schedule.planned,
                                   "executed": schedule.executed,
                                   "saved": schedule.saved, "stopped": schedule.stopped,
                                   "budget_stop": schedule.budget_stop}
        budget = f"; stopped by {schedule.budget_stop}" if schedule.budget_stop else ""
        return (f"{schedule.executed} executions ({schedule.saved} of {schedule.planned} "
                f"planned not run{budget})")
    if stage == "filter":
        decisions, cost = filter_stage.run(cfg, paths)
        state.costs["filter"] = _cost_dict(cost)
        return f"{sum(d.kept for d in decisions)}/{len(decisions)} executions kept"
    if stage == "export":
        result = export.run(cfg, paths)
        state.notes["export"] = {"rows": result.rows, "trajectories": result.trajectories,
                                 "summarised": result.summarised, "refused": result.refused,
                                 "refused_rows": result.refused_rows,
                                 "baselines": result.baselines,
                                 "unchecked_suites": result.unchecked_suites,
                                 "checked_eval": result.checked_eval}
        for task, reasons in result.refused.items():
            verb = "exported anyway (allow_contamination)" if cfg.export.allow_contamination \
                else "refused"
            console.print(f"[yellow]contamination guard:[/yellow] {task} {verb}: "
                          f"{'; '.join(reasons)}")
        write_card(cfg, paths, state)
        return (f"{result.rows} rows -> {paths.dataset_dir}; baselines "
                f"{result.baselines}; {len(result.refused)} task(s) refused")
    raise RsrError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")


def run(cfg: FactoryConfig, stages: Sequence[str] | None = None,
        console: Console | None = None) -> State:
    console = console or Console()
    paths = FactoryPaths(cfg.output_dir, stage_fingerprints(cfg))
    state = State.load(paths.state_file)
    if state.config_digest and state.config_digest != cfg.digest():
        console.print(f"[yellow]note:[/yellow] the config changed since the last run of "
                      f"{cfg.output_dir}; finished work in the ledger is reused only by stages whose "
                      "configuration (models, harnesses and their args, temperatures, prompts, and the "
                      "stages before) is unchanged; the others run again")
    state.config_digest = cfg.digest()
    todo = list(stages or STAGES)
    check_models(cfg, todo)
    # Inspect's own display is a live display too: only one of them may own the terminal.
    with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} stages"), TimeElapsedColumn(),
                  console=console, transient=False,
                  disable=cfg.display == "inspect") as progress:
        bar = progress.add_task("factory", total=len(todo))
        for stage in todo:
            progress.update(bar, description=f"{stage}")
            summary = run_stage(cfg, paths, state, stage, console)
            state.finished[stage] = datetime.now(UTC).isoformat()
            state.save(paths.state_file)
            console.print(f"[green]{stage}[/green]: {summary}")
            progress.advance(bar)
    if "export" in todo:
        md, _ = report.write(paths)
        console.print(f"report: {md}")
    console.print(f"ledger: inspect view --log-dir {paths.root / 'logs'}")
    return state


def _dedupe_counts(paths: FactoryPaths) -> dict[str, int]:
    counts = {"exact": 0, "normalized": 0, "near": 0}
    for d in read_rows(paths.stage_file("decisions"), Decision):
        if d.duplicate:
            counts[d.duplicate] += 1
    return counts


def _logged_models(paths: FactoryPaths, stage: str) -> list[str]:
    """The models of the stage logs whose work this run used (its fingerprint's logs)."""
    from inspect_ai.log import read_eval_log

    from rsr.factory.provenance import METADATA_KEY

    found: set[str] = set()
    for log in sorted(paths.logs(stage).glob("*.eval")):
        header = read_eval_log(str(log), header_only=True)
        recorded = (header.eval.metadata or {}).get(METADATA_KEY) or {}
        if recorded.get("fingerprint") == paths.fingerprints.get(stage):
            found.add(header.eval.model)
            for role in (header.eval.model_roles or {}).values():
                found.update(str(m.model) for m in (role if isinstance(role, list) else [role]))
    return sorted(found)


def write_card(cfg: FactoryConfig, paths: FactoryPaths, state: State) -> None:
    data = report.build(paths)
    f = data["funnel"]
    export_note: dict[str, Any] = state.notes.get("export", {})
    dup = _dedupe_counts(paths)
    lines = [
        f"# {cfg.name}: RSR rewritten Terminus 2 trajectories", "",
        "Each row is one model context of a re-execution of a verified discovery success under "
        "the generic Terminus 2 harness, guided by a private runbook. `messages` are exactly "
        "what the executor model was sent in its last call of that context, followed by its "
        "reply, with one thing removed: the runbook, which reached the model as a system "
        "message in every call. Everything Terminus 2 itself shows stays, because a deployed "
        "model meets it: the first prompt (reply format, instruction, terminal state), terminal "
        "observations, parse-error feedback and auto-correction warnings, and the completion "
        "confirmation (\"Are you sure?\") with the confirming reply. A run that was summarised "
        "at inference gives one row per context (`segment`, `segments`), each later one "
        "opening with its hand-off message (`handoff: true`).", "",
        "## Funnel", "",
        "| stage | count |", "|---|---|",
        f"| discovery rollouts | {f['rollouts']} |", f"| verified sources | {f['sources']} |",
        f"| candidate runbooks | {f['runbooks']} |", f"| planner/critic rounds | {f['runbook_rounds']} |",
        f"| accepted runbooks | {f['accepted']} |", f"| executions | {f['executions']} |",
        f"| passed the verifier | {f['passed']} |", f"| kept after filtering | {f['kept']} |",
        f"| exported trajectories | {export_note.get('trajectories', '–')} |",
        f"| exported rows (model contexts) | {export_note.get('rows', '–')} |",
        f"| trajectories summarised at inference | {export_note.get('summarised', '–')} |", "",
        f"Filter drop reasons: {f['drop_reasons'] or 'none'}.", "",
        "## Dedupe", "",
        "Executions that passed every other check, compared in id order with those kept before "
        "them: exact duplicates (same text), duplicates after normalising sandbox noise "
        "(container hostnames, container/commit ids, timestamps, PIDs, temp names, timings), "
        f"and near-duplicates (MinHash LSH, Jaccard >= {cfg.filter.near_duplicate_threshold} "
        "over 5-word shingles of the normalised trajectory).", "",
        "| duplicate kind | dropped |", "|---|---|",
        f"| exact | {dup['exact']} |", f"| after normalisation | {dup['normalized']} |",
        f"| near-duplicate | {dup['near']} |", "",
        "## Baselines", "",
        f"Rows per baseline: {export_note.get('baselines', {})} (`baselines/`). `direct-sft`: "
        "every discovery success as its harness's model saw it, StateM/RSRT control included "
        "(the paper's Direct SFT); `direct-sft-stripped`: the same runs in their Terminus 2 "
        "view (StateM/RSRT control removed); `terminus2-direct`: the Terminus 2 successes.", "",
        "## Provenance columns", "",
        "task, suite, source_harness, source_trajectory (discovery log#sample), runbook_id, "
        "execution_id, segment, segments, handoff, reward, turns, tokens, content_hash (of the "
        "row), trajectory_hash, runbook_rounds, model, log, contamination.", "",
        "## Models and settings", "",
        f"Base model `{cfg.models.model}`; roles "
        f"{ {r: cfg.models.for_role(r) for r in ('planner', 'critic', 'executor', 'auditor')} }; "
        f"K={cfg.plan.k}, N={cfg.plan.critic_rounds}, M={cfg.execute.m}, executor temperature "
        f"{cfg.execute.temperature}; adaptive execution "
        f"{'on' if cfg.execute.adaptive.enabled else 'off (full K x M)'}; config digest "
        f"{cfg.digest()}.", "",
        "Produced by (the models each stage's logs record, and the stage's configuration "
        "fingerprint; work of another configuration is never reused): "
        + "; ".join(f"{stage} {fp} ({', '.join(_logged_models(paths, stage)) or 'no logs'})"
                    for stage, fp in paths.fingerprints.items()) + ".", "",
        "## Contamination guard", "",
    ]
    checked = export_note.get("checked_eval", {})
    unchecked = export_note.get("unchecked_suites", {})
    lines.append("Compared with the tasks of: " + (", ".join(f"{k} ({v} tasks)"
                                                          for k, v in checked.items())
                                                 or "nothing") + ".")
    if unchecked:
        lines += ["", "**Not checked** (not on this machine; only rows whose suite has one of "
                      "these names were refused, overlap in content could not be looked for): "
                  + ", ".join(sorted(unchecked)) + "."]
    if export_note.get("refused"):
        lines += ["", "Refused:", ""]
        lines += [f"- {task}: {'; '.join(r)}" for task, r in export_note["refused"].items()]
    lines.append("")
    card = "\n".join(lines)
    (paths.root / "DATASET_CARD.md").write_text(card)
    (paths.dataset_dir / "README.md").write_text(card)


def status(cfg: FactoryConfig) -> dict[str, Any]:
    paths = FactoryPaths(cfg.output_dir)
    state = State.load(paths.state_file)
    data = report.build(paths)
    left, exhausted = budget_left(cfg, state)
    unfinished = {stage: failed for stage in ("discover", "plan", "execute", "filter")
                  if (failed := unfinished_samples(paths.logs(stage)))}
    return {"output_dir": str(cfg.output_dir), "finished": state.finished,
            "remaining": [s for s in STAGES if s not in state.finished],
            "unfinished_samples": unfinished,
            "funnel": {k: v for k, v in data["funnel"].items() if k != "per_source"},
            "costs": data["costs"], "adaptive": data["adaptive"],
            "budget": {"rollouts_left": left, "exhausted": exhausted}}
