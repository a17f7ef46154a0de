"""Does a log's header say what its samples did?

A leaderboard entry is named by the header (`eval.model`, `eval.solver`, `eval.task`), which is
one JSON record anyone can edit. The samples keep independent evidence of who ran: Inspect's
model events name the model each call went to (`ModelEvent.model`), `output.model` and the
usage tables are keyed by it, the transcript's solver and agent spans name the solver that ran,
the plan lists the steps, and each sample's metadata names its suite and task. `SampleFacts`
collects that evidence from one sample; `header_problems` compares it with the header and names
every field that differs. (A forger who rewrites every one of these records consistently is not
caught here; duplicates, bundles and regrades are the next lines of defence.)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MODEL_HARNESSES", "SampleFacts", "header_problems", "sample_facts"]

# Harnesses whose every attempt asks the model: a log claiming one of them with no model call
# in any sample is a relabelled run of some other agent.
MODEL_HARNESSES = {"rsr/terminus2", "rsr/statem", "rsr/rsrt"}
SOLVER_SPAN = "solver"
AGENT_SPAN = "agent"


class SampleFacts(BaseModel):
    """What one sample's own records say about the run."""

    model_config = ConfigDict(extra="forbid")

    where: str
    id: str
    models: set[str] = Field(default_factory=set, description="main-role model events' models")
    role_models: set[str] = Field(default_factory=set, description="models of events with a named role")
    output_model: str = ""
    usage_models: set[str] = Field(default_factory=set)
    solvers: list[str] = Field(default_factory=list, description="solver span names, in order")
    agents: list[str] = Field(default_factory=list, description="agent span names")
    suite: str | None = None
    task_dir: str | None = None
    errored_before_agent: bool = False


def sample_facts(sample: Any) -> SampleFacts:
    facts = SampleFacts(where=f"sample {sample.id} epoch {sample.epoch}", id=str(sample.id))
    for e in sample.events or []:
        if e.event == "model":
            (facts.role_models if getattr(e, "role", None) else facts.models).add(str(e.model))
        elif e.event == "span_begin" and e.type == SOLVER_SPAN:
            facts.solvers.append(str(e.name))
        elif e.event == "span_begin" and e.type == AGENT_SPAN:
            facts.agents.append(str(e.name))
    facts.output_model = str(getattr(sample.output, "model", "") or "")
    facts.usage_models = set((sample.model_usage or {}).keys())
    meta = sample.metadata or {}
    facts.suite = meta.get("suite")
    facts.task_dir = meta.get("task_dir")
    facts.errored_before_agent = sample.error is not None and not facts.solvers
    return facts


TASK_SETUP = frozenset({"rsr/sandbox_guard"})
"""Solvers every rsr task runs as its own setup (rsr.suites.sandbox_guard), whatever the solver."""


def _model_names_agree(header: str, reported: str) -> bool:
    """`output.model` is the provider's own name (`gpt-4o-2024-08-06` for `openai/gpt-4o`):
    it agrees when it is the header's model, its name without provider, or an extension of it."""
    name = header.split("/", 1)[-1]
    return reported in (header, name) or reported.startswith(name) or name.endswith(reported)


def header_problems(log: Any, facts: list[SampleFacts], benchmark: str) -> list[str]:
    """Every way the header (model, solver, task, suite pin) disagrees with the samples."""
    spec = log.eval
    problems: list[str] = []
    roles = {str(m.model) for m in (spec.model_roles or {}).values()} if spec.model_roles else set()
    allowed = {spec.model} | roles

    called = set().union(*(f.models for f in facts)) if facts else set()
    if called - {spec.model}:
        problems.append(f"header: eval.model is {spec.model!r} but the samples' model events called "
                        f"{sorted(called - {spec.model})}")
    usage = set().union(*(f.usage_models for f in facts)) if facts else set()
    usage |= set((log.stats.model_usage or {}).keys()) if log.stats else set()
    if usage - allowed:
        problems.append(f"header: eval.model is {spec.model!r} but the model usage records "
                        f"{sorted(usage - allowed)}")
    for f in facts:
        if f.output_model and not _model_names_agree(spec.model, f.output_model):
            problems.append(f"{f.where}: output.model is {f.output_model!r}, not the header's "
                            f"{spec.model!r}")
    if spec.solver in MODEL_HARNESSES and facts and not called and not usage:
        problems.append(f"header: eval.solver is {spec.solver!r}, which calls the model on every "
                        f"attempt, but no sample called any model (the header's model "
                        f"{spec.model!r} never ran)")

    # Every rsr suite runs its sandbox guard as the task's setup step, before any solver.
    plan = [s.solver for s in (log.plan.steps if log.plan else []) if s.solver not in TASK_SETUP]
    if spec.solver is not None and plan and plan != [spec.solver]:
        problems.append(f"header: eval.solver is {spec.solver!r} but the plan's steps are {plan}")
    ran = sorted({s for f in facts for s in f.solvers} - TASK_SETUP)
    if spec.solver is not None and ran and ran != [spec.solver]:
        problems.append(f"header: eval.solver is {spec.solver!r} but the samples' transcripts ran "
                        f"the solver(s) {ran}")
    short = (spec.solver or "").rsplit("/", 1)[-1]
    agents = sorted({a for f in facts for a in f.agents})
    if spec.solver is not None and agents and short not in agents:
        problems.append(f"header: eval.solver is {spec.solver!r} but the samples' agent spans are "
                        f"{agents}")
    for f in facts:
        if spec.solver is not None and not f.solvers and not f.errored_before_agent:
            problems.append(f"{f.where}: the transcript records no solver step")

    if spec.task_registry_name and spec.task_registry_name != spec.task:
        problems.append(f"header: eval.task is {spec.task!r} but the registry name is "
                        f"{spec.task_registry_name!r}")
    meta = spec.metadata or {}
    if meta.get("suite") not in (None, benchmark):
        problems.append(f"header: eval.task is {spec.task!r} but eval.metadata.suite is {meta.get('suite')!r}")
    if spec.dataset and spec.dataset.name not in (None, benchmark):
        problems.append(f"header: eval.task is {spec.task!r} but the dataset is {spec.dataset.name!r}")
    suites = sorted({str(f.suite) for f in facts if f.suite is not None})
    if suites and suites != [benchmark]:
        problems.append(f"header: eval.task is {spec.task!r} (suite {benchmark!r}) but the samples "
                        f"come from suite(s) {suites}")
    root = meta.get("suite_path")
    if root:
        outside = sorted(f.where for f in facts if f.task_dir and not
                         (f.task_dir == root or f.task_dir.startswith(root.rstrip("/") + "/")))
        if outside:
            problems.append(f"header: eval.metadata.suite_path is {root!r} but {', '.join(outside[:5])} "
                            "ran tasks from elsewhere")
    status = meta.get("pin_status")
    if status == "pinned" and meta.get("pinned_digest") not in (None, meta.get("suite_digest")):
        problems.append(f"header: pin_status is 'pinned' but the suite digest {meta.get('suite_digest')} "
                        f"differs from the pin {meta.get('pinned_digest')}")
    if status == "unpinned" and not meta.get("unpinned"):
        problems.append("header: pin_status is 'unpinned' but eval.metadata.unpinned is false")
    ids = sorted(str(i) for i in (spec.dataset.sample_ids or [])) if spec.dataset else []
    seen = sorted({f.id for f in facts})
    if ids and seen and set(seen) - set(ids):
        problems.append(f"header: the dataset lists samples {ids} but the log holds {seen}")
    return problems
