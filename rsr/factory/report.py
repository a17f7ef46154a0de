"""`rsr factory report` / `status`: complementarity, funnel, similarity, costs, case studies.

Definitions (also written into the report):
- *Solved by a harness*: at least one discovery rollout of the task under that harness passed.
- *Exact command overlap* of two trajectories: |A ∩ B| / |A ∪ B| over the sets of their
  commands (each keystroke string, whitespace-normalised).
- *Command-order similarity*: length of the longest common subsequence of the two command
  sequences divided by the length of the longer one.
- Both are averaged over pairs of passing executions of the *same runbook* and over pairs from
  *different runbooks of the same source* (the paper's Table 4 comparison).
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rsr.factory.compress import commands_of
from rsr.factory.config import STAGES
from rsr.factory.ledger import FactoryPaths, State
from rsr.factory.records import Decision, Execution, Rollout, Runbook, Source, read_rows

DEFINITIONS = {
    "solved": "a task is solved by a harness if at least one of its discovery rollouts under "
              "that harness passed the verifier",
    "exact_command_overlap": "|A ∩ B| / |A ∪ B| over the sets of whitespace-normalised "
                             "commands (keystroke strings) of two trajectories",
    "command_order_similarity": "longest common subsequence of the two command sequences "
                                "divided by the length of the longer sequence",
    "pairs": "same runbook: pairs of passing executions of one runbook; different runbooks: "
             "pairs of passing executions of two runbooks of the same source",
    "rollouts_saved": "executions a full schedule (every accepted runbook M times) would run "
                      "minus those run; the kept count is the one reported next to it",
    "saved_at_equal_kept": "the full schedule's rollouts per kept trajectory are estimated from "
                           "each runbook's observed keep rate (kept / executed, times M); the "
                           "rollouts it would need for the adaptive run's kept count, minus the "
                           "rollouts the adaptive run used (an estimate: unexecuted rollouts are "
                           "assumed to keep at their runbook's observed rate)",
}


def complementarity(rollouts: list[Rollout]) -> dict[str, Any]:
    harnesses = sorted({r.harness for r in rollouts})
    solved: dict[str, set[str]] = {h: set() for h in harnesses}
    per: dict[str, dict[str, int]] = {h: {"rollouts": 0, "passed": 0} for h in harnesses}
    tasks = sorted({r.task for r in rollouts})
    for r in rollouts:
        per[r.harness]["rollouts"] += 1
        if r.passed:
            per[r.harness]["passed"] += 1
            solved[r.harness].add(r.task)
    union = set().union(*solved.values()) if solved else set()
    by_set: dict[str, int] = defaultdict(int)
    for task in union:
        combo = tuple(h for h in harnesses if task in solved[h])
        by_set["+".join(combo)] += 1
    best = max((len(s) for s in solved.values()), default=0)
    return {
        "tasks": len(tasks),
        "harnesses": {h: {**per[h], "solved": len(solved[h])} for h in harnesses},
        "union": len(union),
        "best_single": best,
        "union_gain": len(union) - best,
        "exactly_one": {h: by_set.get(h, 0) for h in harnesses},
        "all": by_set.get("+".join(harnesses), 0) if harnesses else 0,
        "intersections": dict(sorted(by_set.items(), key=lambda kv: -kv[1])),
        "solved_tasks": {h: sorted(s) for h, s in solved.items()},
    }


def upset_plot(comp: dict[str, Any], path: Path) -> Path | None:
    """An UpSet-style plot: intersection sizes (bars) over a harness membership matrix."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return None
    harnesses = list(comp["harnesses"])
    combos = list(comp["intersections"].items())
    if not harnesses or not combos:
        return None
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(4, 1.1 * len(combos) + 2), 4.5),
                                      gridspec_kw={"height_ratios": [2, 1]}, sharex=True)
    xs = range(len(combos))
    top.bar(xs, [n for _, n in combos], color="#333")
    for x, (_, n) in zip(xs, combos, strict=True):
        top.text(x, n, str(n), ha="center", va="bottom", fontsize=9)
    top.set_ylabel("tasks solved")
    top.yaxis.set_major_locator(MaxNLocator(integer=True))
    top.set_title("Tasks solved by exactly these harnesses")
    for x, (combo, _) in zip(xs, combos, strict=True):
        members = combo.split("+")
        ys = [harnesses.index(h) for h in members]
        bottom.scatter([x] * len(harnesses), range(len(harnesses)), color="#ddd", s=60)
        bottom.scatter([x] * len(ys), ys, color="#333", s=60)
        if len(ys) > 1:
            bottom.plot([x, x], [min(ys), max(ys)], color="#333")
    bottom.set_yticks(range(len(harnesses)))
    bottom.set_yticklabels([f"{h} ({comp['harnesses'][h]['solved']})" for h in harnesses])
    bottom.set_xticks([])
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _median(values: list[int]) -> float | None:
    return float(statistics.median(values)) if values else None


def reason_kind(reason: str) -> str:
    """A filter reason without its specifics (values, ids), for counting."""
    return re.split(r":| \(| of \S+~", reason, maxsplit=1)[0]


def funnel(paths: FactoryPaths) -> dict[str, Any]:
    rollouts = read_rows(paths.stage_file("rollouts"), Rollout)
    sources = read_rows(paths.stage_file("sources"), Source)
    runbooks = read_rows(paths.stage_file("runbooks"), Runbook)
    executions = read_rows(paths.stage_file("executions"), Execution)
    decisions = read_rows(paths.stage_file("decisions"), Decision)
    kept_ids = {d.execution_id for d in decisions if d.kept}
    drops: dict[str, int] = defaultdict(int)
    for d in decisions:
        for reason in d.reasons:
            drops[reason_kind(reason)] += 1
    per_source = []
    for s in sources:
        mine = [e for e in executions if e.source_id == s.id]
        rbs = [r for r in runbooks if r.source_id == s.id]
        kept = [e for e in mine if e.id in kept_ids]
        per_source.append({
            "source": s.id, "task": s.task, "harness": s.harness, "source_turns": s.turns,
            "runbooks": len(rbs), "accepted": sum(r.accepted for r in rbs),
            "executions": len(mine), "passed": sum(e.passed for e in mine),
            "pass_rate": (sum(e.passed for e in mine) / len(mine)) if mine else None,
            "kept": len(kept), "median_rewrite_turns": _median([e.turns for e in kept])})
    rejections: dict[str, int] = defaultdict(int)
    for r in runbooks:
        for a in r.attempts:
            if a.verdict.verdict == "reject":
                rejections[a.verdict.stage or "?"] += 1
    return {
        "rollouts": len(rollouts), "successes": sum(r.passed for r in rollouts),
        "sources": len(sources), "runbooks": len(runbooks),
        "runbook_rounds": sum(len(r.attempts) for r in runbooks),
        "rejections": dict(rejections),
        "accepted": sum(r.accepted for r in runbooks), "executions": len(executions),
        "passed": sum(e.passed for e in executions), "kept": len(kept_ids),
        "drop_reasons": dict(drops),
        "median_turns_source": _median([s.turns for s in sources]),
        "median_turns_rewrite": _median([e.turns for e in executions if e.id in kept_ids]),
        "per_source": per_source,
    }


def _lcs(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def _pair_scores(a: list[str], b: list[str]) -> tuple[float, float]:
    sa, sb = set(a), set(b)
    exact = len(sa & sb) / len(sa | sb) if sa | sb else 0.0
    order = _lcs(a, b) / max(len(a), len(b)) if a or b else 0.0
    return exact, order


def similarity(executions: list[Execution]) -> dict[str, Any]:
    cmds = {e.id: [" ".join(c.split()) for c in commands_of(e.messages)]
            for e in executions if e.passed}
    passing = [e for e in executions if e.passed]
    same: list[tuple[float, float]] = []
    diff: list[tuple[float, float]] = []
    for a, b in itertools.combinations(passing, 2):
        if a.source_id != b.source_id:
            continue
        (same if a.runbook_id == b.runbook_id else diff).append(_pair_scores(cmds[a.id],
                                                                             cmds[b.id]))

    def mean(values: list[tuple[float, float]], i: int) -> float | None:
        return round(sum(v[i] for v in values) / len(values), 4) if values else None

    return {"same_runbook": {"pairs": len(same), "exact_command_overlap": mean(same, 0),
                             "command_order_similarity": mean(same, 1)},
            "different_runbooks": {"pairs": len(diff), "exact_command_overlap": mean(diff, 0),
                                   "command_order_similarity": mean(diff, 1)}}


@dataclass
class Costs:
    stages: dict[str, dict[str, float]]
    total_tokens: int
    total_sandbox_minutes: float
    total_rollouts: int
    kept: int

    def per_kept(self) -> dict[str, float | None]:
        k = self.kept
        return {"tokens": round(self.total_tokens / k, 1) if k else None,
                "sandbox_minutes": round(self.total_sandbox_minutes / k, 3) if k else None,
                "rollouts": round(self.total_rollouts / k, 3) if k else None}


def costs(state: State, kept: int) -> Costs:
    tokens = int(sum(c.get("tokens", 0) for c in state.costs.values()))
    minutes = sum(c.get("sandbox_seconds", 0.0) for c in state.costs.values()) / 60
    rollouts = int(sum(c.get("rollouts", 0) for c in state.costs.values()))
    return Costs(stages=state.costs, total_tokens=tokens, total_sandbox_minutes=round(minutes, 3),
                 total_rollouts=rollouts, kept=kept)


def adaptive_savings(paths: FactoryPaths, notes: dict[str, Any]) -> dict[str, Any]:
    """Rollouts saved by adaptive execution, in total and at equal kept count (estimated)."""
    if not notes or not notes.get("m"):
        return notes
    m = int(notes["m"])
    executions = read_rows(paths.stage_file("executions"), Execution)
    kept_ids = {d.execution_id for d in read_rows(paths.stage_file("decisions"), Decision)
                if d.kept}
    by_runbook: dict[str, list[bool]] = defaultdict(list)
    for e in executions:
        by_runbook[e.runbook_id].append(e.id in kept_ids)
    accepted = [r.id for r in read_rows(paths.stage_file("runbooks"), Runbook) if r.accepted]
    full_kept = sum(m * sum(by_runbook[r]) / len(by_runbook[r]) for r in accepted
                    if by_runbook[r])
    kept = len(kept_ids)
    out = dict(notes)
    out["kept"] = kept
    out["rollouts_per_kept_adaptive"] = round(len(executions) / kept, 3) if kept else None
    if full_kept > 0:
        per_kept_full = notes["planned"] / full_kept
        out["rollouts_per_kept_full_estimate"] = round(per_kept_full, 3)
        out["full_rollouts_at_equal_kept_estimate"] = round(per_kept_full * kept, 2)
        out["saved_at_equal_kept_estimate"] = round(per_kept_full * kept - len(executions), 2)
    return out


def build(paths: FactoryPaths) -> dict[str, Any]:
    state = State.load(paths.state_file)
    f = funnel(paths)
    c = costs(state, f["kept"])
    return {
        "complementarity": complementarity(read_rows(paths.stage_file("rollouts"), Rollout)),
        "funnel": f,
        "similarity": similarity(read_rows(paths.stage_file("executions"), Execution)),
        "adaptive": adaptive_savings(paths, state.notes.get("adaptive", {})),
        "export": state.notes.get("export", {}),
        "costs": {**asdict(c), "per_kept": c.per_kept()},
        "definitions": DEFINITIONS,
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def markdown(data: dict[str, Any], plot: str | None) -> str:
    comp, f, sim = data["complementarity"], data["funnel"], data["similarity"]
    out = ["# RSR factory report", "", "## Harness complementarity", "",
           "| harness | rollouts | passed | tasks solved | solved only by it |", "|---|---|---|---|---|"]
    for h, v in comp["harnesses"].items():
        out.append(f"| {h} | {v['rollouts']} | {v['passed']} | {v['solved']} | "
                   f"{comp['exactly_one'].get(h, 0)} |")
    out += ["", f"Union {comp['union']} of {comp['tasks']} tasks vs best single harness "
                f"{comp['best_single']} (+{comp['union_gain']}); solved by all: {comp['all']}.", ""]
    if plot:
        out += [f"![UpSet-style plot]({plot})", ""]
    out += ["## Funnel", "",
            "| rollouts | successes (sources) | runbooks | planner rounds | accepted | executions"
            " | passed | kept |", "|---|---|---|---|---|---|---|---|",
            f"| {f['rollouts']} | {f['sources']} | {f['runbooks']} | {f['runbook_rounds']} | "
            f"{f['accepted']} | {f['executions']} | {f['passed']} | {f['kept']} |", "",
            f"Critic rejections by stage: {f['rejections'] or 'none'}. "
            f"Filter drop reasons: {f['drop_reasons'] or 'none'}.", "",
            f"Median turns: sources {_fmt(f['median_turns_source'])}, kept rewrites "
            f"{_fmt(f['median_turns_rewrite'])}.", "", "### Per source (case studies)", "",
            "| source | harness | turns | runbooks | accepted | executions | passed | pass rate "
            "| kept | median rewrite turns |", "|---|---|---|---|---|---|---|---|---|---|"]
    for s in f["per_source"]:
        out.append(f"| {s['source']} | {s['harness']} | {s['source_turns']} | {s['runbooks']} | "
                   f"{s['accepted']} | {s['executions']} | {s['passed']} | {_fmt(s['pass_rate'])}"
                   f" | {s['kept']} | {_fmt(s['median_rewrite_turns'])} |")
    out += ["", "## Command similarity", "", "| pairs of | pairs | exact command overlap | "
            "command-order similarity |", "|---|---|---|---|"]
    for label, key in (("same runbook", "same_runbook"), ("different runbooks", "different_runbooks")):
        v = sim[key]
        out.append(f"| {label} | {v['pairs']} | {_fmt(v['exact_command_overlap'])} | "
                   f"{_fmt(v['command_order_similarity'])} |")
    adaptive = data.get("adaptive") or {}
    costs_ = data["costs"]
    out += ["", "## Adaptive execution", "",
            f"Planned (full schedule) {adaptive.get('planned', '–')}, executed "
            f"{adaptive.get('executed', '–')}, saved {adaptive.get('saved', '–')} rollouts, "
            f"kept {f['kept']}. Rollouts per kept trajectory: adaptive "
            f"{_fmt(adaptive.get('rollouts_per_kept_adaptive'))}, full schedule (estimated) "
            f"{_fmt(adaptive.get('rollouts_per_kept_full_estimate'))}; at equal kept count the "
            f"full schedule needs {_fmt(adaptive.get('full_rollouts_at_equal_kept_estimate'))} "
            f"rollouts (saved {_fmt(adaptive.get('saved_at_equal_kept_estimate'))}).", "",
            "## Cost", "", "| stage | samples | rollouts | tokens | sandbox minutes | tokens per kept "
            "| sandbox minutes per kept | rollouts per kept |", "|---|---|---|---|---|---|---|---|"]
    kept = max(f["kept"], 0)
    order = {name: i for i, name in enumerate(STAGES)}
    for stage, c in sorted(costs_["stages"].items(), key=lambda kv: order.get(kv[0], 99)):
        minutes = c.get("sandbox_seconds", 0) / 60

        def per(value: float) -> str:
            return f"{value / kept:.3g}" if kept else "–"

        out.append(f"| {stage} | {int(c.get('samples', 0))} | {int(c.get('rollouts', 0))} | "
                   f"{int(c.get('tokens', 0))} | {minutes:.2f} | {per(c.get('tokens', 0))} | "
                   f"{per(minutes)} | {per(c.get('rollouts', 0))} |")
    per = costs_["per_kept"]
    out += ["", f"Per kept trajectory: {_fmt(per['tokens'])} tokens, "
                f"{_fmt(per['sandbox_minutes'])} sandbox minutes, {_fmt(per['rollouts'])} rollouts.",
            "", "## Definitions", ""]
    out += [f"- **{k}**: {v}" for k, v in data["definitions"].items()]
    export = data.get("export") or {}
    if export.get("refused"):
        out += ["", "## Contamination guard", ""]
        out += [f"- refused {task}: {'; '.join(reasons)}" for task, reasons in export["refused"].items()]
    return "\n".join(out) + "\n"


def write(paths: FactoryPaths) -> tuple[Path, dict[str, Any]]:
    data = build(paths)
    plot = upset_plot(data["complementarity"], paths.root / "report" / "upset.png")
    report_dir = paths.root / "report"
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "report.json").write_text(json.dumps(data, indent=2) + "\n")
    md = report_dir / "report.md"
    md.write_text(markdown(data, plot.name if plot else None))
    return md, data
