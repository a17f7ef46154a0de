"""Stage 6, filter: which executions become training data.

An execution is kept only if
1. it passed the task verifier (reward 1);
2. its history is clean: every segment alternates user/assistant from its first prompt (or
   hand-off), and no message contains runbook text, planner/critic/guidance prompt text, or
   the control text of StateM or RSRT (Terminus 2's own messages belong there);
3. the agent's replies pass the deterministic leak scan (`critique.reply_leaks`): no hidden
   value typed before any observation showed it, no mention of private guidance;
4. the auditor (model role `auditor`, an Inspect task `audit` without sandbox) marks no value
   that cannot be derived from the task or the environment. A marked value must occur in one of
   the agent's replies; marks that do not are recorded and ignored;
5. it duplicates no execution kept before it: not exactly, not after normalising sandbox noise
   (hostnames, ids, times, PIDs, temp names), and not as a near-duplicate (MinHash LSH,
   `filter.near_duplicate_threshold`).
"""

from __future__ import annotations

import json
from string import Template
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import store

from rsr.factory.config import FactoryConfig
from rsr.factory.critique import (
    SHINGLE,
    SOURCE_CONTROL_PATTERNS,
    TaskMaterial,
    _norm,
    load_prompt,
    reply_leaks,
    shingles,
    source_control_lines,
)
from rsr.factory.dedupe import Deduper, normalized_hash
from rsr.factory.ledger import FactoryPaths, StageCost, run_eval, sample_tokens
from rsr.factory.records import (
    Decision,
    Execution,
    Runbook,
    Source,
    content_hash,
    read_rows,
    write_rows,
)
from rsr.tasks.load import load_task

STORE_AUDIT = "rsr_factory_audit"
AUDITOR_PROMPT = "auditor.v1"
FACTORY_PROMPTS = ("planner.v1", "planner_user.v1", "revise.v1", "critic.v1", "guidance.v1",
                   "auditor.v1")


def render_for_audit(messages: list[dict[str, str]]) -> str:
    parts, turn = [], 0
    for m in messages[1:]:
        if m["role"] == "assistant":
            turn += 1
            parts.append(f"[agent turn {turn}]\n{m['content']}")
        else:
            parts.append(f"[terminal]\n{m['content']}")
    return "\n\n".join(parts)


def parse_marks(text: str) -> list[dict[str, Any]] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start:end + 1])
    except json.JSONDecodeError:
        return None
    marks = data.get("underived") if isinstance(data, dict) else None
    if not isinstance(marks, list):
        return None
    return [m if isinstance(m, dict) else {"value": str(m)} for m in marks]


@solver
def audit(executions: dict[str, Execution]) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        execution = executions[state.metadata["execution_id"]]
        user = Template(load_prompt("auditor_user.v1")).substitute(
            instruction=state.input_text.strip(),
            trajectory=render_for_audit(execution.messages))
        output = await get_model(role="auditor").generate(
            [ChatMessageSystem(content=load_prompt(AUDITOR_PROMPT)), ChatMessageUser(content=user)],
            config=GenerateConfig(temperature=0.0))
        marks = parse_marks(output.completion)
        replies = "\n".join(m["content"] for m in execution.messages if m["role"] == "assistant")
        if marks is None:
            result = {"ok": False, "error": f"auditor reply is not a marks object: "
                                            f"{output.completion[:200]!r}",
                      "underived": [], "ignored": []}
        else:
            real = [m for m in marks if str(m.get("value", "")) and str(m["value"]) in replies]
            ignored = [m for m in marks if m not in real]
            result = {"ok": True, "error": None, "underived": real, "ignored": ignored}
        store().set(STORE_AUDIT, result)
        return state

    return solve


@scorer(metrics=[mean()])
def clean() -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        result = store().get(STORE_AUDIT) or {}
        return Score(value=1 if result.get("ok") and not result.get("underived") else 0,
                     explanation=json.dumps(result)[:2000])

    return score


def history_problems(execution: Execution, runbook: Runbook | None, min_chars: int) -> list[str]:
    """Why an execution's messages are not a clean Terminus 2 history."""
    problems: list[str] = []
    msgs = execution.messages
    segments = [s.messages for s in execution.segments] or [msgs]
    for n, seg in enumerate(segments):
        if not seg or seg[0]["role"] != "user":
            problems.append(f"segment {n} does not start with a user prompt")
            continue
        for i, m in enumerate(seg):
            expected = "user" if i % 2 == 0 else "assistant"
            if m["role"] != expected:
                problems.append(f"segment {n}: messages[{i}] is {m['role']}, expected {expected}")
                break
    text = _norm("\n".join(m["content"] for m in msgs))
    leaks: list[tuple[str, str]] = []
    if runbook is not None and runbook.body is not None:
        leaks += [(_norm(line), "runbook text") for line in runbook.body.lines()]
    for name in FACTORY_PROMPTS:
        leaks += [(_norm(line), f"factory prompt {name}") for line in
                  load_prompt(name).splitlines() if "$" not in line]
    leaks += [(line, f"source-harness control ({name})") for line, name in source_control_lines()]
    for line, where in leaks:
        if len(line) >= min_chars and line in text:
            problems.append(f"{where} in the public history: {line[:80]!r}")
    raw = "\n".join(m["content"] for m in msgs)
    for pattern, name in SOURCE_CONTROL_PATTERNS:
        m = pattern.search(raw)
        if m:
            problems.append(f"source-harness control ({name}) in the public history: "
                            f"{m.group(0)!r}")
    if runbook is not None and runbook.body is not None and msgs:
        # Copying shorter stretches of the runbook into replies also leaks it; words the task
        # prompt already contains do not count.
        replies = "\n".join(m["content"] for m in msgs if m["role"] == "assistant")
        copied = (shingles(runbook.body.render()) & shingles(replies)) - shingles(msgs[0]["content"])
        if copied:
            problems.append(f"runbook text ({len(copied)} {SHINGLE}-word run(s)) in the agent's "
                            f"replies: {' '.join(sorted(copied)[0])!r}")
    return problems


def run(cfg: FactoryConfig, paths: FactoryPaths) -> tuple[list[Decision], StageCost]:
    executions = read_rows(paths.stage_file("executions"), Execution)
    runbooks = {r.id: r for r in read_rows(paths.stage_file("runbooks"), Runbook)}
    passed = {e.id: e for e in executions if e.passed and e.reward >= 1.0}
    sources = {s.id: s for s in read_rows(paths.stage_file("sources"), Source)}
    materials: dict[str, TaskMaterial] = {}
    log_dir = paths.logs("filter")
    if cfg.filter.auditor:
        done = paths.done("filter")
        instructions = {s.id: s.instruction for s in sources.values()}
        samples = [Sample(id=e.id, input=instructions[e.source_id],
                          metadata={"execution_id": e.id, "task_name": e.task,
                                    "runbook_id": e.runbook_id, "suite": e.suite})
                   for e in passed.values() if f"{e.id}@1" not in done]
        if samples:
            run_eval(cfg, [Task(name="audit", dataset=MemoryDataset(samples),
                                solver=audit(passed), scorer=clean(),
                                metadata={"factory_stage": "filter",
                                          "prompts": [AUDITOR_PROMPT, "auditor_user.v1"]})],
                     log_dir, cfg.models.for_role("auditor"), roles=True, sandboxed=False)
    audits = {str(ls.sample.id): ls.sample for ls in paths.done("filter").values()}

    cost = StageCost()
    decisions: list[Decision] = []
    deduper = Deduper(cfg.filter.near_duplicate_threshold)
    for e in sorted(executions, key=lambda x: x.id):
        reasons: list[str] = []
        underived: list[dict[str, Any]] = []
        tokens = 0
        if not e.passed or e.reward < 1.0:
            reasons.append(f"failed the verifier (reward {e.reward:g})")
        else:
            reasons += history_problems(e, runbooks.get(e.runbook_id), cfg.filter.min_leak_chars)
            source = sources.get(e.source_id)
            if source is not None:
                if source.id not in materials:
                    materials[source.id] = TaskMaterial.of(load_task(source.task_dir), source)
                reasons += [str(r) for r in reply_leaks(e.messages, materials[source.id])]
            if cfg.filter.auditor:
                sample = audits.get(e.id)
                if sample is None:
                    reasons.append("not audited (audit sample missing or failed)")
                else:
                    cost.add(sample, sandboxed=False)
                    tokens = sample_tokens(sample)
                    result = sample.store.get(STORE_AUDIT) or {}
                    underived = list(result.get("underived") or [])
                    if result.get("error"):
                        reasons.append(str(result["error"]))
                    if underived:
                        values = ", ".join(repr(str(m.get("value"))) for m in underived)
                        reasons.append(f"auditor marked underived value(s): {values}")
        digest = content_hash(e.messages)
        dup = None
        if not reasons and cfg.filter.dedupe:
            dup = deduper.check(e.id, e.messages, digest)
            if dup is not None:
                how = {"exact": "exact duplicate", "normalized": "duplicate after normalising "
                       "sandbox noise", "near": f"near-duplicate (MinHash Jaccard "
                       f"{dup.similarity:.2f})"}[dup.how]
                reasons.append(f"{how} of {dup.of}")
        decisions.append(Decision(execution_id=e.id, kept=not reasons, reasons=reasons,
                                  underived=underived, content_hash=digest,
                                  normalized_hash=normalized_hash(e.messages),
                                  duplicate_of=dup.of if dup else None,
                                  duplicate=dup.how if dup else None,  # type: ignore[arg-type]
                                  auditor_tokens=tokens))
    write_rows(paths.stage_file("decisions"), decisions)
    return decisions, cost
