"""Stage 5, execute: each accepted runbook up to M times in fresh sandboxes under Terminus 2.

The runbook reaches the model as `private_guidance` (a system message in each model call,
never in the recorded messages), so the recorded contexts minus that one system message are
exactly what Terminus 2 shows at inference. Executions run in rounds (round r = the r-th
execution of every runbook still active). By default every accepted runbook runs M times (the
paper's K x M); with adaptive execution (opt-in) the filter runs after each round and a
runbook stops after repeated executions that were not kept, a source once it has enough kept
trajectories; the rollouts not run are reported as saved.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from string import Template

from inspect_ai import Task
from inspect_ai.agent import Agent, AgentState, agent, as_solver
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver._task_state import sample_state

from rsr.factory.config import FactoryConfig
from rsr.factory.critique import load_prompt
from rsr.factory.discover import score_of
from rsr.factory.ledger import (
    FactoryPaths,
    StageCost,
    State,
    budget_left,
    run_eval,
    sample_seconds,
    sample_tokens,
)
from rsr.factory.records import Execution, Runbook, Source, read_rows, write_rows
from rsr.harness.terminus2 import STORE_RESULT, TerminalHarness, Terminus2Config
from rsr.suites.inspect_tasks import task_sample
from rsr.tasks.load import load_task
from rsr.trajectories.model_view import model_view
from rsr.verify.scorer import verifier

GUIDANCE_PROMPT = "guidance.v1"
GUIDANCE_KEY = "private_guidance"


def guidance_text(runbook: Runbook) -> str:
    assert runbook.body is not None
    return Template(load_prompt(GUIDANCE_PROMPT)).substitute(runbook=runbook.body.render())


@agent
def guided_terminus2(temperature: float = 0.7, max_episodes: int = 200,
                     wait_mode: str = "fixed", agent_timeout_sec: float | None = None) -> Agent:
    """`rsr/terminus2` with the sample's runbook (metadata `private_guidance`) as private
    guidance."""

    async def execute(state: AgentState) -> AgentState:
        sample = sample_state()
        guidance = (sample.metadata or {}).get(GUIDANCE_KEY) if sample else None
        config = Terminus2Config(temperature=temperature, max_episodes=max_episodes,
                                 wait_mode=wait_mode,  # type: ignore[arg-type]
                                 agent_timeout_sec=agent_timeout_sec, private_guidance=guidance)
        return await TerminalHarness(config)(state)

    return execute


def execution_id(runbook_id: str, index: int) -> str:
    return f"{runbook_id}#m{index}"


@dataclass
class Schedule:
    """Which executions ran, which were skipped by adaptive stopping, and why."""

    planned: int = 0
    executed: int = 0
    stopped: dict[str, str] = field(default_factory=dict)
    budget_stop: str | None = None

    @property
    def saved(self) -> int:
        return self.planned - self.executed


def _stop_reason(cfg: FactoryConfig, runbook: Runbook, by_runbook: dict[str, list[Execution]],
                 source_kept: dict[str, int], kept: set[str]) -> str | None:
    adaptive = cfg.execute.adaptive
    if not adaptive.enabled:
        return None
    if adaptive.stop_source_after_kept is not None and \
            source_kept[runbook.source_id] >= adaptive.stop_source_after_kept:
        return f"source has {source_kept[runbook.source_id]} kept trajectories"
    limit = adaptive.stop_runbook_after_failures
    if limit is not None:
        runs = sorted(by_runbook[runbook.id], key=lambda e: e.index)
        tail = 0
        for e in reversed(runs):
            if e.id in kept:
                break
            tail += 1
        if tail >= limit:
            return f"{tail} consecutive executions not kept"
    return None


def _kept(cfg: FactoryConfig, paths: FactoryPaths) -> set[str]:
    """Run the filter over what has executed so far (audits are resumable, so each execution
    is audited once) and return the ids it keeps."""
    from rsr.factory import filter as filter_stage

    decisions, _ = filter_stage.run(cfg, paths)
    return {d.execution_id for d in decisions if d.kept}


def run(cfg: FactoryConfig, paths: FactoryPaths, state: State | None = None) -> Schedule:
    """Execute in rounds; budgets (rollouts, tokens, sandbox minutes over all stages so far)
    are checked before every round."""
    runbooks = [r for r in read_rows(paths.stage_file("runbooks"), Runbook) if r.accepted]
    log_dir = paths.logs("execute")
    schedule = Schedule(planned=len(runbooks) * cfg.execute.m)
    agent_ = guided_terminus2(temperature=cfg.execute.temperature,
                              max_episodes=cfg.execute.max_episodes,
                              wait_mode=cfg.execute.wait_mode,
                              agent_timeout_sec=cfg.execute.agent_timeout_sec)
    sources = {s.id: s for s in read_rows(paths.stage_file("sources"), Source)}
    for round_ in range(cfg.execute.m):
        executions = collect(paths)
        kept = _kept(cfg, paths) if cfg.execute.adaptive.enabled and executions else set()
        by_runbook: dict[str, list[Execution]] = defaultdict(list)
        source_kept: dict[str, int] = defaultdict(int)
        for e in executions:
            by_runbook[e.runbook_id].append(e)
            source_kept[e.source_id] += int(e.id in kept)
        done = {e.id for e in executions}
        samples: list[Sample] = []
        for runbook in runbooks:
            eid = execution_id(runbook.id, round_)
            if eid in done:
                continue
            reason = _stop_reason(cfg, runbook, by_runbook, source_kept, kept)
            if reason is not None:
                schedule.stopped.setdefault(runbook.id, f"stopped before execution {round_}: "
                                                        f"{reason}")
                continue
            source = sources[runbook.source_id]
            sample = task_sample(load_task(source.task_dir), source.suite, cfg.sandbox,
                                     integrity=cfg.integrity)
            sample.id = eid
            sample.metadata = {**(sample.metadata or {}), "runbook_id": runbook.id,
                               "source_id": runbook.source_id, "index": round_,
                               "round": round_, "candidate": runbook.candidate,
                               GUIDANCE_KEY: guidance_text(runbook)}
            samples.append(sample)
        spent = State(costs={**(state.costs if state else {}),
                             "execute": {k: float(v) for k, v in asdict(cost(paths)).items()}})
        left, exhausted = budget_left(cfg, spent)
        if exhausted and samples:
            schedule.budget_stop = f"{exhausted} before round {round_}"
            break
        if left is not None and len(samples) > left:
            schedule.budget_stop = f"rollout budget: {left} left for {len(samples)} executions"
            samples = samples[:left]
        if samples:
            run_eval(cfg, [Task(name=f"execute_r{round_}", dataset=MemoryDataset(samples),
                                solver=as_solver(agent_), scorer=verifier(cfg.integrity),
                                metadata={"factory_stage": "execute", "round": round_,
                                          "prompts": [GUIDANCE_PROMPT]})],
                     log_dir, cfg.models.for_role("executor"))
        if schedule.budget_stop:
            break
    schedule.executed = len(collect(paths))
    return schedule


def collect(paths: FactoryPaths) -> list[Execution]:
    rows: list[Execution] = []
    for _, logged in sorted(paths.done("execute").items()):
        sample = logged.sample
        meta = sample.metadata or {}
        passed, reward = score_of(sample)
        # Executions run under Terminus 2: its segments are exactly the model's contexts.
        view = model_view(sample, strip_source_control=True)
        result = sample.store.get(STORE_RESULT) or {}
        rows.append(Execution(
            id=str(sample.id), runbook_id=meta["runbook_id"], source_id=meta["source_id"],
            task=meta["task_name"], suite=meta["suite"], index=meta["index"],
            round=meta["round"], passed=passed, reward=reward,
            turns=int(result.get("turns", 0)), tokens=sample_tokens(sample),
            sandbox_seconds=sample_seconds(sample), log=str(logged.log),
            messages=view.messages, segments=view.segments,
            summarisation_calls=view.summarisation_calls))
    write_rows(paths.stage_file("executions"), rows)
    return rows


def cost(paths: FactoryPaths) -> StageCost:
    total = StageCost()
    for logged in paths.done("execute").values():
        total.add(logged.sample, sandboxed=True)
    return total
