"""Table 5: benchmarks x labelled runs, with the paper's numbers beside as reference.

    rsr report table5 logs/base logs/direct logs/rsr --out report/

Each log folder is one labelled run (label = folder name unless given); each `.eval` file in
it is one benchmark (benchmark = Inspect task name without namespace, `core` for `rsr/core`).
Writes `table5.md` (the table, per-task breakdown with gained/lost tasks and links into the
logs, errored samples), `table5.csv` (one row per benchmark x label) and `table5.png`.
A benchmark a run lacks is *missing*, never zero.
"""

from __future__ import annotations

import csv
import os
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rsr.errors import RsrError, TaskFormatError
from rsr.report.logs import RunLog, read_runs
from rsr.report.metrics import SuiteMetrics, headline

__all__ = [
    "CSV_COLUMNS",
    "LabelledRun",
    "PaperTable",
    "Table5",
    "build_table5",
    "load_paper_table",
    "write_table5",
]

DEFAULT_PAPER_TABLE = "paper_table5.yaml"
Metric = Literal["pass_at_3", "mean", "process"]
K = 3

CSV_COLUMNS = [
    "benchmark", "label", "status", "pass_at_3", "pass_hat_3", "mean", "stderr", "process",
    "process_stderr", "solved", "n_tasks", "n_runs", "n_errors", "n_missing", "n_infra", "infra_by_kind",
    "mean_excl_infra", "errors_by_kind", "run_means",
    "model", "log", "verification", "paper_pass_at_3", "paper_mean", "paper_process",
    # Selected tasks that did not run here (a GPU task without a GPU): outside n_tasks.
    "n_not_run", "not_run",
    # What the number is not: a run on an unpinned copy, a reference agent's run (not a model's).
    "agent", "pin_status", "caveats",
]

REFERENCE_AGENTS = {"rsr/oracle": "reference solution, not a model", "rsr/null": "null agent, not a model"}


def caveats(run: RunLog | None) -> list[str]:
    """What a number from this run must be shown with, wherever it is shown: an unpinned copy
    of the suite (not the benchmark the paper ran) and a reference agent (not a model)."""
    if run is None:
        return []
    out = []
    if run.metadata.get("unpinned") or run.metadata.get("pin_status") == "unpinned":
        out.append("unpinned copy")
    agent = run.solver or str(run.metadata.get("rsr_agent") or "")
    if agent in REFERENCE_AGENTS:
        out.append(f"{agent}: {REFERENCE_AGENTS[agent]}")
    return out


def caveat_note(run: RunLog | None) -> str:
    """The run's caveats as a parenthesised suffix (empty when it has none)."""
    found = caveats(run)
    return f" ({'; '.join(found)})" if found else ""

# How a cell's numbers were checked (`rsr report table5 --regrade`).
Verification = Literal["reproduced", "not-reproduced", "no-bundle", "not-regraded"]
VERIFICATION_MARK = {"reproduced": "✓", "not-reproduced": "✗", "no-bundle": "?", "not-regraded": ""}


class PaperRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: str
    title: str
    metric: Metric
    n_tasks: int
    values: dict[str, float]


class PaperTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    columns: list[str]
    rows: list[PaperRow]

    def value(self, benchmark: str, metric: str, column: str) -> float | None:
        for row in self.rows:
            if row.benchmark == benchmark and row.metric == metric:
                key = self.column_for(column)
                return row.values.get(key) if key else None
        return None

    def column_for(self, label: str) -> str | None:
        """The paper column a run label refers to. Labels default to folder names, so match
        loosely: `rsr` -> RSR, `direct` or `direct-sft` -> Direct SFT, `base` -> Base."""
        def norm(text: str) -> str:
            return "".join(ch for ch in text.lower() if ch.isalnum())

        wanted = norm(label)
        if not wanted:
            return None
        exact = [c for c in self.columns if norm(c) == wanted]
        if exact:
            return exact[0]
        prefixed = [c for c in self.columns if norm(c).startswith(wanted)]
        return prefixed[0] if len(prefixed) == 1 else None


def load_paper_table(path: Path | None = None) -> PaperTable:
    """The reference numbers: the packaged Table 5, or a user's YAML (`--paper`), whose
    errors name the file and the field."""
    if path is None:
        text = resources.files("rsr.report").joinpath("data").joinpath(DEFAULT_PAPER_TABLE)
        return PaperTable.model_validate(yaml.safe_load(text.read_text()))
    from rsr.yaml_model import read_yaml_mapping

    data = read_yaml_mapping(path, "reference table (--paper)", TaskFormatError)
    try:
        return PaperTable.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise TaskFormatError(path, ".".join(map(str, err["loc"])) or None, err["msg"]) from e


class LabelledRun(BaseModel):
    """One log folder: a label and the latest run of each benchmark in it."""

    model_config = ConfigDict(extra="forbid")

    label: str
    folder: Path
    runs: dict[str, RunLog]
    metrics: dict[str, SuiteMetrics]
    notes: list[str] = Field(default_factory=list)
    verification: dict[str, Verification] = Field(
        default_factory=dict, description="benchmark -> what regrading its log from the bundles gave")


class TableRow(BaseModel):
    """One line of the Markdown table: a benchmark reported by one metric."""

    model_config = ConfigDict(extra="forbid")

    benchmark: str
    title: str
    metric: Metric
    paper_tasks: int | None = None


class Table5(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runs: list[LabelledRun]
    rows: list[TableRow]
    benchmarks: list[str]
    paper: PaperTable


def build_table5(
    folders: list[Path], labels: list[str] | None = None, paper: PaperTable | None = None,
    regrade: bool = False,
) -> Table5:
    """Read every folder; labels pair with folders in order and default to folder names.
    `regrade`: re-run the verifier on every log's evidence bundles (Docker) and mark each cell
    with the outcome."""
    labels = list(labels or [])
    if len(labels) > len(folders):
        raise RsrError(f"{len(labels)} labels given for {len(folders)} log folders")
    paper = paper or load_paper_table()
    runs: list[LabelledRun] = []
    for i, folder in enumerate(folders):
        folder = Path(folder)
        if not folder.is_dir():
            raise RsrError(f"{folder}: not a log folder")
        label = labels[i] if i < len(labels) else folder.resolve().name
        if label in {r.label for r in runs}:
            raise RsrError(f"label {label!r} used twice; pass --label to tell the runs apart")
        found, notes = read_runs(folder)
        if not found:
            notes.append(f"{folder}: no .eval logs found")
        metrics = {bench: run.metrics(k=K) for bench, run in found.items() if run.task_names()}
        verification: dict[str, Verification] = {}
        if regrade:
            for bench, run in found.items():
                verification[bench], note = _regraded(run)
                if note:
                    notes.append(f"{bench}: {note}")
        runs.append(LabelledRun(label=label, folder=folder, runs=found, metrics=metrics,
                                notes=notes, verification=verification))

    rows = [TableRow(benchmark=r.benchmark, title=r.title, metric=r.metric,
                     paper_tasks=r.n_tasks) for r in paper.rows]
    paper_benchmarks = list(dict.fromkeys(r.benchmark for r in paper.rows))
    extra = sorted({b for r in runs for b in r.runs} - set(paper_benchmarks))
    for bench in extra:
        rows.append(TableRow(benchmark=bench, title=bench, metric="pass_at_3"))
        rows.append(TableRow(benchmark=bench, title=f"{bench} mean pass rate", metric="mean"))
    return Table5(runs=runs, rows=rows, benchmarks=paper_benchmarks + extra, paper=paper)


def _regraded(run: RunLog) -> tuple[Verification, str]:
    from rsr.verify.regrade import regrade_log

    report = regrade_log(run.path)
    if report.ok:
        return "reproduced", ""
    if all(s.status in ("no-bundle", "bundle-missing") for s in report.samples):
        return "no-bundle", ("no evidence bundles beside the log (run with -T evidence=true; keep the "
                             "evidence/ folder with the log): not regraded")
    problems = report.problems()
    return "not-reproduced", (f"regrade reproduced {report.reproduced}/{len(report.samples)} samples: "
                              + "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _cell(m: SuiteMetrics | None, metric: Metric) -> str:
    if m is None:
        return "missing"
    if metric == "pass_at_3":
        if m.pass_at_k is None:
            return f"n/a ({m.n_runs} run{'s' if m.n_runs != 1 else ''} < {K})"
        exact = f" ({m.solved}/{m.n_tasks})" if m.n_runs == K else ""
        return _pct(m.pass_at_k) + exact
    if metric == "mean":
        excl = "" if not m.n_infra else (
            f" (excl. {m.n_infra} infra: {'n/a' if m.mean_excl_infra is None else _pct(m.mean_excl_infra)})")
        return f"{_pct(m.mean)} ± {100 * m.stderr:.1f}{excl}"
    return f"{m.process:.2f} ± {m.process_stderr:.2f}"


def _value(m: SuiteMetrics | None, metric: Metric) -> float | None:
    if m is None:
        return None
    return {"pass_at_3": m.pass_at_k, "mean": m.mean, "process": m.process}[metric]


def _paper_cell(v: float | None, metric: Metric) -> str:
    if v is None:
        return ""
    return f"{v:.2f}" if metric == "process" else _pct(v)


def _rel(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def _marked(cell: str, status: Verification) -> str:
    mark = VERIFICATION_MARK[status]
    return f"{cell} {mark}" if mark and cell != "missing" else cell


def render_markdown(table: Table5, out_dir: Path) -> str:
    labels = [r.label for r in table.runs]
    regraded = any(r.verification for r in table.runs)
    cols = ["benchmark", "tasks", *labels, *[f"paper: {c}" for c in table.paper.columns]]
    lines = [
        "# Table 5",
        "",
        "pass@3 is the unbiased estimator over the runs of each task, averaged over tasks; "
        "mean is the pass rate over all runs ± its standard error over tasks; process is the "
        "mean process reward. Errored, missing and infrastructure-failed runs count as failures; "
        "each run's line under Runs also gives the pass rate excluding infrastructure errors. "
        "A task a run could not run here (one that needs a GPU on a machine without one) is "
        "outside its denominators and counted beside the cell (`of N run; K not run: needs a GPU`). "
        f"Paper columns: {table.paper.source}.",
        *(["", "Verification (`--regrade`: every log re-verified from its evidence bundles, no model "
            "or agent): ✓ every score reproduced; ✗ some score not reproduced (see Runs); ? the log "
            "keeps no bundles."] if regraded else []),
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for row in table.rows:
        n_tasks = {r.metrics[row.benchmark].n_tasks for r in table.runs
                   if row.benchmark in r.metrics}
        tasks = "/".join(str(n) for n in sorted(n_tasks)) or (
            f"({row.paper_tasks})" if row.paper_tasks else "")
        cells = [_marked(_cell(r.metrics.get(row.benchmark), row.metric),
                         r.verification.get(row.benchmark, "not-regraded"))
                 + _not_run_note(r, row.benchmark)
                 + (caveat_note(r.runs.get(row.benchmark)) if row.benchmark in r.metrics else "")
                 for r in table.runs]
        skipped = {len(r.runs[row.benchmark].not_run()) for r in table.runs if row.benchmark in r.runs}
        if tasks and skipped - {0}:
            tasks += " (+" + "/".join(str(n) for n in sorted(skipped)) + " not run)"
        paper = [_paper_cell(table.paper.value(row.benchmark, row.metric, c), row.metric)
                 for c in table.paper.columns]
        lines.append("| " + " | ".join([row.title, tasks, *cells, *paper]) + " |")

    lines += ["", "## Runs", ""]
    for r in table.runs:
        lines.append(f"- **{r.label}** — `{_rel(r.folder, out_dir)}`")
        for bench, run in sorted(r.runs.items()):
            m = r.metrics.get(bench)
            detail = f"{m.n_tasks} tasks x {m.n_runs} runs; {headline(m)}" if m else "no samples"
            if run.not_run():
                detail += (f"; {run.not_run_summary()} ("
                           + ", ".join(str(i.get("task")) for i in run.not_run()) + ")")
            check = r.verification.get(bench)
            lines.append(f"  - {bench}: [{run.path.name}]({_rel(run.path, out_dir)}) "
                         f"({run.model}, {run.status}; {detail})" + caveat_note(run)
                         + (f"; regrade: {check}" if check else ""))
        lines.extend(f"  - note: {n}" for n in r.notes)

    lines += _task_breakdown(table, out_dir)
    lines += _errored(table, out_dir)
    return "\n".join(lines) + "\n"


def _not_run_note(run: LabelledRun, bench: str) -> str:
    """`of 70 run; 4 not run: needs a GPU` after a cell whose run left tasks out."""
    log, m = run.runs.get(bench), run.metrics.get(bench)
    if log is None or m is None or not log.not_run():
        return ""
    return f" of {m.n_tasks} run; {log.not_run_summary()}"


def _task_breakdown(table: Table5, out_dir: Path) -> list[str]:
    lines = ["", "## Per-task results", "",
             "Cells are passes/runs and link to the log. A task is *solved* when any run "
             "passed; gained/lost compare each run with the previous column. Sample links "
             "open in `inspect view --log-dir <run folder>` (http://127.0.0.1:7575).", ""]
    for bench in table.benchmarks:
        present = [r for r in table.runs if bench in r.runs]
        if not present:
            continue
        lines += [f"### {bench}", ""]
        skipped = {r.label: {str(i.get("task")): str(i.get("reason")) for i in r.runs[bench].not_run()}
                   for r in present}
        names = sorted({t for r in present for t in r.runs[bench].task_names()}
                       | {t for r in present for t in skipped[r.label]})
        header = ["task", *[r.label for r in table.runs]]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        outcome = {
            r.label: {o.task: o for o in r.runs[bench].outcomes()} for r in present
        }
        for name in names:
            cells = [name]
            for r in table.runs:
                o = outcome.get(r.label, {}).get(name)
                if o is None and name in skipped.get(r.label, {}):
                    cells.append(f"not run: {skipped[r.label][name]}")
                elif o is None:
                    cells.append("missing")
                else:
                    infra = sum(1 for k in o.infra if k is not None)
                    mark = (f"{o.c}/{o.n}" + (f" ({o.errors} err)" if o.errors else "")
                            + (f" ({infra} infra)" if infra else ""))
                    cells.append(f"[{mark}]({_rel(r.runs[bench].path, out_dir)})")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        for prev, cur in zip(table.runs, table.runs[1:], strict=False):
            if bench not in prev.runs or bench not in cur.runs:
                continue
            before = {t for t, o in outcome[prev.label].items() if o.c > 0}
            after = {t for t, o in outcome[cur.label].items() if o.c > 0}
            for word, tasks in (("gained", sorted(after - before)),
                                ("lost", sorted(before - after))):
                links = [_task_links(cur if word == "gained" else prev, bench, t)
                         for t in tasks]
                lines.append(f"- {cur.label} vs {prev.label}: {word} {len(tasks)}"
                             + (": " + "; ".join(links) if links else ""))
        lines.append("")
    return lines


def _task_links(run: LabelledRun, bench: str, task: str) -> str:
    log = run.runs[bench]
    samples = sorted((s for s in log.samples if s.task_name == task), key=lambda s: s.epoch)
    links = ", ".join(
        f"[e{s.epoch}{'✓' if s.passed else '✗'}](http://127.0.0.1:7575/{log.viewer_link(s)})"
        for s in samples
    )
    return f"{task} ({run.label}: {links})"


def _errored(table: Table5, out_dir: Path) -> list[str]:
    lines = ["## Errored, unscored and infrastructure-failed runs (counted as failures)", ""]
    any_errors = False
    for r in table.runs:
        for bench, run in sorted(r.runs.items()):
            bad = [s for s in run.samples if s.failed_to_run or s.infra]
            if not bad:
                continue
            any_errors = True
            lines.append(f"- {r.label} / {bench}: {len(bad)}")
            for s in sorted(bad, key=lambda s: (s.task_name, s.epoch)):
                why = s.error or ("no verifier score" if not s.scored else "")
                if s.infra:
                    why = f"infra error ({s.infra}): {s.infra_message or ''}"
                why = why.splitlines()[0][:160] if why else ""
                lines.append(f"  - [{s.task_name} epoch {s.epoch}]"
                             f"(http://127.0.0.1:7575/{run.viewer_link(s)}): {why}")
    if not any_errors:
        lines.append("None.")
    return lines + [""]


def csv_rows(table: Table5) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for bench in table.benchmarks:
        for r in table.runs:
            m = r.metrics.get(bench)
            run = r.runs.get(bench)
            row: dict[str, object] = {c: "" for c in CSV_COLUMNS}
            row.update(benchmark=bench, label=r.label, status="ok" if m else "missing")
            for metric in ("pass_at_3", "mean", "process"):
                v = table.paper.value(bench, metric, r.label)
                row[f"paper_{metric}"] = "" if v is None else v
            if m is not None and run is not None:
                row.update(
                    pass_at_3="" if m.pass_at_k is None else m.pass_at_k,
                    pass_hat_3="" if m.pass_hat_k is None else m.pass_hat_k,
                    mean=m.mean, stderr=m.stderr, process=m.process,
                    process_stderr=m.process_stderr, solved=m.solved, n_tasks=m.n_tasks,
                    n_runs=m.n_runs, n_errors=m.n_errors, n_missing=m.n_missing, n_infra=m.n_infra,
                    infra_by_kind=";".join(f"{k}={n}" for k, n in m.infra_by_kind.items()),
                    mean_excl_infra="" if m.mean_excl_infra is None else m.mean_excl_infra,
                    errors_by_kind=";".join(f"{k}={n}" for k, n in m.errors_by_kind.items()),
                    run_means=";".join(f"{x:.6g}" for x in m.run_means),
                    model=run.model, log=str(run.path),
                    verification=r.verification.get(bench, "not-regraded"),
                    n_not_run=len(run.not_run()),
                    agent=run.solver or "", pin_status=run.metadata.get("pin_status", ""),
                    caveats="; ".join(caveats(run)),
                    not_run=";".join(f"{i.get('task')}: {i.get('reason')}" for i in run.not_run()),
                )
            out.append(row)
    return out


def render_chart(table: Table5, path: Path) -> None:
    from rsr.report.plotting import pyplot

    plt = pyplot()
    series = [(r.label + "".join(sorted({caveat_note(run) for run in r.runs.values()})),
               [_value(r.metrics.get(row.benchmark), row.metric) for row in table.rows],
               False) for r in table.runs]
    series += [(f"paper: {c}",
                [table.paper.value(row.benchmark, row.metric, c) for row in table.rows], True)
               for c in table.paper.columns]
    n_rows, n_series = len(table.rows), len(series)
    width = 0.8 / max(n_series, 1)
    fig, ax = plt.subplots(figsize=(min(24.0, 3.0 + 1.1 * n_rows), 5.0))
    for i, (name, values, is_paper) in enumerate(series):
        xs = [j + (i - (n_series - 1) / 2) * width for j in range(n_rows)]
        heights = [v if v is not None else 0.0 for v in values]
        ax.bar(xs, heights, width, label=name, alpha=0.35 if is_paper else 0.9,
               hatch="//" if is_paper else None, edgecolor="black", linewidth=0.3)
        if is_paper:
            continue
        # Our bars carry their value, and a missing suite says so: a bare gap reads as zero.
        for x, v in zip(xs, values, strict=True):
            text = "missing" if v is None else f"{v:.2f}"
            ax.text(x, (v or 0.0) + 0.01, text, rotation=90, ha="center", va="bottom",
                    fontsize=6, color="dimgray" if v is None else "black")
    ax.set_xticks(range(n_rows))
    ax.set_xticklabels([f"{r.benchmark}\n{r.metric}" for r in table.rows], fontsize=8)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("fraction")
    ax.set_title("Table 5: our runs vs the paper")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_table5(table: Table5, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"md": out_dir / "table5.md", "csv": out_dir / "table5.csv",
             "png": out_dir / "table5.png"}
    paths["md"].write_text(render_markdown(table, out_dir))
    with paths["csv"].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(csv_rows(table))
    render_chart(table, paths["png"])
    return paths
