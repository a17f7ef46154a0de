"""Stage 3, plan (with stage 4, critique): K candidate runbooks per source, each revised by the
planner until the critic accepts it or N rounds are used.

An Inspect task `plan` with one sample per (source, candidate) and no sandbox; the planner and
critic are the model roles `planner` and `critic`. A rejection goes back to the planner, in the
same conversation, with the critic's reasons.
"""

from __future__ import annotations

from string import Template
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import store

from rsr.factory.config import FactoryConfig
from rsr.factory.critique import (
    CRITIC_PROMPT,
    deterministic_checks,
    deterministic_verdict,
    load_prompt,
    model_review,
)
from rsr.factory.ledger import FactoryPaths, StageCost, run_eval, sample_tokens
from rsr.factory.records import Attempt, Runbook, Source, read_rows, write_rows
from rsr.harness import prompts as harness_prompts
from rsr.harness.protocol import parse_reply
from rsr.tasks.load import load_task

STORE_RUNBOOK = "rsr_factory_runbook"
PLANNER_PROMPT = "planner.v1"
OBSERVATION_CHARS = 1_500


def _without_confirmation(text: str) -> str:
    """The terminal state of Terminus 2's completion question (the planner needs the screen,
    not harness wording it might echo into a runbook)."""
    head, _, tail = harness_prompts.load(harness_prompts.CONFIRM).partition("$terminal_state")
    marker = tail.strip().splitlines()[0]
    if text.startswith(head) and marker in text:
        return text[len(head):text.index(marker)]
    return text


def render_trajectory(messages: list[dict[str, str]]) -> str:
    """Commands and terminal output of a public history, compact, for the planner."""
    lines: list[str] = []
    for m in messages[1:]:
        if m["role"] == "assistant":
            parsed = parse_reply(m["content"], "json")
            if parsed.reply is None:
                continue
            lines += [f"$ {c.keystrokes.rstrip()}" for c in parsed.reply.commands]
        else:
            text = _without_confirmation(m["content"]).strip()
            if len(text) > OBSERVATION_CHARS:
                half = OBSERVATION_CHARS // 2
                text = f"{text[:half]}\n[...]\n{text[-half:]}"
            lines.append(text)
    return "\n".join(lines)


def runbook_id(source_id: str, candidate: int) -> str:
    return f"{source_id}#k{candidate}"


@solver
def plan_candidate(cfg: FactoryConfig, sources: dict[str, Source]) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        source = sources[meta["source_id"]]
        task = load_task(source.task_dir)
        planner, critic = get_model(role="planner"), get_model(role="critic")
        user = Template(load_prompt("planner_user.v1")).substitute(
            instruction=task.instruction.strip(), trajectory=render_trajectory(source.messages),
            candidate=meta["candidate"] + 1)
        conversation: list[ChatMessage] = [ChatMessageSystem(content=load_prompt(PLANNER_PROMPT)),
                                           ChatMessageUser(content=user)]
        attempts: list[Attempt] = []
        accepted = None
        for round_ in range(1, cfg.plan.critic_rounds + 1):
            output = await planner.generate(conversation,
                                            config=GenerateConfig(temperature=cfg.plan.temperature))
            raw = output.completion
            body, reasons = deterministic_checks(task, raw, source)
            verdict = deterministic_verdict(reasons)
            if body is not None and verdict.verdict == "accept" and cfg.plan.model_review:
                verdict, _ = await model_review(critic, task.instruction, body)
            attempts.append(Attempt(round=round_, raw=raw, body=body, verdict=verdict))
            if verdict.verdict == "accept":
                accepted = body
                break
            reasons_text = "\n".join(f"- {r}" for r in verdict.reasons)
            conversation += [ChatMessageAssistant(content=raw), ChatMessageUser(
                content=Template(load_prompt("revise.v1")).substitute(reasons=reasons_text))]
        record = Runbook(id=runbook_id(source.id, meta["candidate"]), source_id=source.id,
                         task=source.task, candidate=meta["candidate"],
                         accepted=accepted is not None, body=accepted, attempts=attempts)
        store().set(STORE_RUNBOOK, record.model_dump(mode="json"))
        state.output.completion = accepted.render() if accepted else ""
        return state

    return solve


@scorer(metrics=[mean()])
def accepted() -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        record: dict[str, Any] = store().get(STORE_RUNBOOK) or {}
        rounds = len(record.get("attempts", []))
        return Score(value=1 if record.get("accepted") else 0,
                     explanation=f"{rounds} round(s)")

    return score


def run(cfg: FactoryConfig, paths: FactoryPaths) -> StageCost:
    sources = {s.id: s for s in read_rows(paths.stage_file("sources"), Source)}
    log_dir = paths.logs("plan")
    done = paths.done("plan")
    samples = []
    for source in sources.values():
        for k in range(cfg.plan.k):
            sid = runbook_id(source.id, k)
            if f"{sid}@1" in done:
                continue
            samples.append(Sample(id=sid, input=source.instruction, metadata={
                "source_id": source.id, "candidate": k, "task_name": source.task,
                "task_dir": source.task_dir, "suite": source.suite}))
    if samples:
        task = Task(name="plan", dataset=MemoryDataset(samples),
                    solver=plan_candidate(cfg, sources), scorer=accepted(),
                    metadata={"factory_stage": "plan", "prompts": [
                        PLANNER_PROMPT, "planner_user.v1", "revise.v1", CRITIC_PROMPT]})
        run_eval(cfg, [task], log_dir, cfg.models.for_role("planner"), roles=True,
                 sandboxed=False)
    return collect(paths)


def collect(paths: FactoryPaths) -> StageCost:
    cost = StageCost()
    rows = []
    for _, logged in sorted(paths.done("plan").items()):
        record = Runbook.model_validate(logged.sample.store[STORE_RUNBOOK])
        record.tokens = sample_tokens(logged.sample)
        cost.add(logged.sample, sandboxed=False)
        rows.append(record)
    write_rows(paths.stage_file("runbooks"), rows)
    return cost
