"""ATIF (Harbor's Agent Trajectory Interchange Format) export of a harness run, shaped as
Harbor 0.26's Terminus 2 writes it (schema ATIF-v1.8).

One user step for the first prompt; one agent step per model reply: its message is
"Analysis: ...\nPlan: ..." (the raw reply for one that failed to parse), its commands are
`bash_command` tool calls `call_<episode>_<n>` plus `mark_task_complete`, and the prompt that
followed is its observation (`source_call_id` set when the batch had exactly one command).
A summarisation is a system step whose observation refers to three embedded
sub-trajectories (summary, questions, answers), followed by the hand-off as a user step.
Harness control stays in (ATIF is the full record) and each step's `extra` says what it was:
`rsr_kind`, `rsr_control`, `rsr_turn`, `task_complete`, `rsr_parse_warnings`,
`rsr_parse_error`, `observation_kind`, `observation_control` (all always present on agent
steps; None when they do not apply).
"""

from __future__ import annotations

from typing import Any, Literal

from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ChatMessage, ContentReasoning
from pydantic import BaseModel, ConfigDict, Field

from rsr.harness.control import turn_meta
from rsr.harness.terminus2 import HARNESS_VERSION, PARSE_KEY, STORE_RESULT, STORE_SETTINGS

ATIF_VERSION = "ATIF-v1.8"
SUMMARY_KINDS = {"summary_request": "summary", "summary": "summary",
                 "questions_request": "questions", "questions": "questions",
                 "answers_request": "answers", "answers": "answers"}
OBSERVATION_KINDS = {"observation", "confirm", "parse_error", "state_display", "reflection"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class SubagentTrajectoryRef(_Model):
    trajectory_id: str | None = None
    session_id: str | None = None
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None


class ObservationResult(_Model):
    source_call_id: str | None = None
    content: str | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None


class Observation(_Model):
    results: list[ObservationResult]


class Metrics(_Model):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Step(_Model):
    step_id: int
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    message: str
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Agent(_Model):
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class FinalMetrics(_Model):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Trajectory(_Model):
    schema_version: str = ATIF_VERSION
    session_id: str
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step]
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    subagent_trajectories: list[Trajectory] | None = None


def _reasoning(message: ChatMessage) -> str | None:
    if isinstance(message.content, str):
        return None
    parts = [c.reasoning for c in message.content if isinstance(c, ContentReasoning)]
    return "\n".join(parts) if parts else None


def _episode_calls(parse: dict[str, Any], episode: int) -> list[ToolCall]:
    calls = [ToolCall(tool_call_id=f"call_{episode}_{n + 1}", function_name="bash_command",
                      arguments={"keystrokes": c["keystrokes"], "duration": c["duration"]})
             for n, c in enumerate(parse.get("commands") or [])]
    if parse.get("task_complete"):
        calls.append(ToolCall(tool_call_id=f"call_{episode}_task_complete",
                              function_name="mark_task_complete", arguments={}))
    return calls


def _observe(step: Step, content: str, n_commands: int, episode: int) -> None:
    source = f"call_{episode}_1" if n_commands == 1 else None
    step.observation = Observation(results=[ObservationResult(source_call_id=source,
                                                              content=content)])


def _agent_step(message: ChatMessage, step_id: int, model_name: str | None) -> Step:
    meta = turn_meta(message)
    parse: dict[str, Any] = dict((message.metadata or {}).get(PARSE_KEY) or {})
    kind = meta.kind if meta else "reply"
    step = Step(step_id=step_id, source="agent", model_name=model_name,
                timestamp=meta.started_at if meta else None,
                reasoning_content=_reasoning(message), message=message.text,
                extra={"rsr_kind": kind, "rsr_control": bool(meta and meta.control),
                       "rsr_turn": meta.turn if meta else None,
                       "task_complete": parse.get("task_complete"),
                       "rsr_parse_warnings": list(meta.warnings) if meta else [],
                       "rsr_parse_error": parse.get("error"),
                       "observation_kind": None, "observation_control": None})
    if kind == "reply" and parse:
        lines = [f"{label}: {parse[key]}" for label, key in (("Analysis", "analysis"),
                                                               ("Plan", "plan")) if parse.get(key)]
        step.message = "\n".join(lines)
        step.extra["raw_content"] = message.text
        episode = (meta.turn or 1) - 1 if meta else 0
        step.tool_calls = _episode_calls(parse, episode) or None
        if "final_observation" in parse:
            _observe(step, parse["final_observation"], len(parse.get("commands") or []),
                     episode)
            step.extra["observation_kind"] = "observation"
            step.extra["observation_control"] = False
    if meta is not None:
        step.metrics = Metrics(prompt_tokens=meta.usage.get("input_tokens"),
                               completion_tokens=meta.usage.get("output_tokens"),
                               extra={"timing": meta.timing} if meta.timing else {})
    return step


def _subagent(kind: str, messages: list[ChatMessage], parent: str, index: int,
              model_name: str | None) -> Trajectory:
    steps: list[Step] = []
    for message in messages:
        if message.role == "assistant":
            meta = turn_meta(message)
            steps.append(Step(step_id=len(steps) + 1, source="agent", model_name=model_name,
                              message=message.text, reasoning_content=_reasoning(message),
                              metrics=Metrics(prompt_tokens=meta.usage.get("input_tokens"),
                                              completion_tokens=meta.usage.get("output_tokens"))
                              if meta else None))
        else:
            steps.append(Step(step_id=len(steps) + 1, source="user", message=message.text))
    trajectory_id = f"{parent}-summarization-{index}-{kind}"
    return Trajectory(session_id=trajectory_id, trajectory_id=trajectory_id,
                      agent=Agent(name=f"terminus-2-summarization-{kind}",
                                  version=HARNESS_VERSION, model_name=model_name,
                                  extra={"parent_session_id": parent,
                                         "summarization_index": index}),
                      steps=steps)


def to_atif(sample: EvalSample, log: EvalLog | None = None) -> Trajectory:
    settings: dict[str, Any] = dict(sample.store.get(STORE_SETTINGS) or {})
    result: dict[str, Any] = dict(sample.store.get(STORE_RESULT) or {})
    model_name = log.eval.model if log is not None else None
    session_id = f"{log.eval.eval_id if log else 'sample'}:{sample.id}:{sample.epoch}"
    steps: list[Step] = []
    subagents: list[Trajectory] = []
    pending_summary: dict[str, list[ChatMessage]] = {}
    open_step: Step | None = None
    for message in sample.messages:
        meta = turn_meta(message)
        kind = meta.kind if meta else message.role
        if kind in SUMMARY_KINDS:
            pending_summary.setdefault(SUMMARY_KINDS[kind], []).append(message)
            continue
        if message.role == "assistant":
            open_step = _agent_step(message, len(steps) + 1, model_name)
            steps.append(open_step)
            continue
        extra = {"rsr_kind": kind, "rsr_control": bool(meta and meta.control),
                 "rsr_turn": meta.turn if meta else None}
        if open_step is not None and open_step.observation is None and kind in OBSERVATION_KINDS:
            n = sum(1 for c in open_step.tool_calls or [] if c.function_name == "bash_command")
            episode = (open_step.extra.get("rsr_turn") or 1) - 1
            _observe(open_step, message.text, n, episode)
            open_step.extra["observation_kind"] = kind
            open_step.extra["observation_control"] = extra["rsr_control"]
            continue
        if kind == "handoff" and pending_summary:
            index = len(subagents) // 3 + 1
            refs = []
            for part in ("summary", "questions", "answers"):
                if part in pending_summary:
                    sub = _subagent(part, pending_summary[part], session_id, index, model_name)
                    subagents.append(sub)
                    refs.append(SubagentTrajectoryRef(
                        trajectory_id=sub.trajectory_id, session_id=sub.session_id,
                        extra={"summary": f"Context summarization {index}: {part}"}))
            pending_summary = {}
            steps.append(Step(step_id=len(steps) + 1, source="system",
                              message="Context summarization and hand-off.",
                              observation=Observation(results=[ObservationResult(
                                  subagent_trajectory_ref=refs)]),
                              extra={"context_management": {"type": "compaction",
                                                             "boundary": "replace"},
                                     "rsr_kind": "summarization", "rsr_control": True,
                                     "rsr_turn": meta.turn if meta else None}))
        source: Literal["system", "user"] = "system" if message.role == "system" else "user"
        steps.append(Step(step_id=len(steps) + 1, source=source, message=message.text,
                          extra=extra))
        open_step = None

    agent_steps = [s for s in steps if s.source == "agent" and s.metrics is not None]
    score = next(iter(sample.scores.values())).value if sample.scores else None
    final = FinalMetrics(
        total_prompt_tokens=sum(s.metrics.prompt_tokens or 0 for s in agent_steps),  # type: ignore[union-attr]
        total_completion_tokens=sum(s.metrics.completion_tokens or 0 for s in agent_steps),  # type: ignore[union-attr]
        total_steps=len(steps),
        extra={"end_reason": result.get("end_reason"), "turns": result.get("turns"),
               "elapsed_sec": result.get("elapsed_sec"),
               "total_time_sec": sample.total_time, "working_time_sec": sample.working_time,
               "score": score})
    harness = settings.get("harness", "unknown")
    return Trajectory(
        session_id=session_id, trajectory_id=session_id,
        agent=Agent(name=f"rsr/{harness}", version=settings.get("harness_version",
                                                                 HARNESS_VERSION),
                    model_name=model_name,
                    extra={"parser": settings.get("reply_format", "json"),
                           "prompt_pack": settings.get("prompt_pack"),
                           "prompt_pack_sha256": settings.get("prompt_pack_sha256"),
                           "settings": settings}),
        steps=steps, final_metrics=final, subagent_trajectories=subagents or None,
        extra={"task": (sample.metadata or {}).get("task_name", str(sample.id)),
               "suite": (sample.metadata or {}).get("suite"),
               "task_digest": (sample.metadata or {}).get("task_digest"),
               "epoch": sample.epoch, "result": result})
