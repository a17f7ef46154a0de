"""ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001) shaped export of a harness run.

One agent step per model reply: the raw reply as `message`, its commands as `tool_calls`
(`send_keys` with keystrokes and duration), the terminal output that followed as the
`observation`, and token counts and timings as `metrics`. Harness control is kept (ATIF is the
full record) and flagged in each step's `extra` (`rsr_kind`, `rsr_control`).
"""

from __future__ import annotations

from typing import Any, Literal

from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ChatMessage, ContentReasoning
from pydantic import BaseModel, ConfigDict, Field

from rsr.harness.control import turn_meta
from rsr.harness.protocol import parse_reply
from rsr.harness.terminus2 import HARNESS_VERSION, STORE_RESULT, STORE_SETTINGS

ATIF_VERSION = "ATIF-v1.7"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class ObservationResult(_Model):
    source_call_id: str | None = None
    content: str | None = None


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
    agent: Agent
    steps: list[Step]
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


def _reasoning(message: ChatMessage) -> str | None:
    if isinstance(message.content, str):
        return None
    parts = [c.reasoning for c in message.content if isinstance(c, ContentReasoning)]
    return "\n".join(parts) if parts else None


def to_atif(sample: EvalSample, log: EvalLog | None = None) -> Trajectory:
    settings: dict[str, Any] = dict(sample.store.get(STORE_SETTINGS) or {})
    result: dict[str, Any] = dict(sample.store.get(STORE_RESULT) or {})
    reply_format = settings.get("reply_format", "json")
    model_name = log.eval.model if log is not None else None
    steps: list[Step] = []
    messages = sample.messages
    i = 0
    while i < len(messages):
        message = messages[i]
        meta = turn_meta(message)
        kind = meta.kind if meta else message.role
        extra = {"rsr_kind": kind, "rsr_control": bool(meta and meta.control)}
        if meta and meta.turn is not None:
            extra["rsr_turn"] = meta.turn
        if message.role != "assistant":
            source: Literal["system", "user"] = "system" if message.role == "system" else "user"
            steps.append(Step(step_id=len(steps) + 1, source=source, message=message.text,
                              extra=extra))
            i += 1
            continue
        step = Step(step_id=len(steps) + 1, source="agent", model_name=model_name,
                    message=message.text, reasoning_content=_reasoning(message),
                    timestamp=meta.started_at if meta else None, extra=extra)
        if meta is not None:
            usage = meta.usage
            step.metrics = Metrics(prompt_tokens=usage.get("input_tokens"),
                                   completion_tokens=usage.get("output_tokens"),
                                   extra={"timing": meta.timing} if meta.timing else {})
            if meta.warnings:
                extra["rsr_parse_warnings"] = meta.warnings
        if kind == "reply":
            parsed = parse_reply(message.text, reply_format)
            if parsed.reply is not None:
                step.tool_calls = [
                    ToolCall(tool_call_id=f"call_{meta.turn if meta else i}_{n}",
                             function_name="send_keys",
                             arguments={"keystrokes": c.keystrokes, "duration": c.duration})
                    for n, c in enumerate(parsed.reply.commands)]
                extra["task_complete"] = parsed.reply.task_complete
        # The user message answering a reply is that step's observation.
        following = messages[i + 1] if i + 1 < len(messages) else None
        if kind in ("reply", "invalid_reply") and following is not None \
                and following.role == "user":
            follow_meta = turn_meta(following)
            step.observation = Observation(results=[ObservationResult(content=following.text)])
            extra["observation_kind"] = follow_meta.kind if follow_meta else "user"
            extra["observation_control"] = bool(follow_meta and follow_meta.control)
            i += 1
        steps.append(step)
        i += 1

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
        session_id=f"{log.eval.eval_id if log else 'sample'}:{sample.id}:{sample.epoch}",
        agent=Agent(name=f"rsr/{harness}", version=settings.get("harness_version",
                                                                 HARNESS_VERSION),
                    model_name=model_name, extra={"settings": settings}),
        steps=steps, final_metrics=final,
        extra={"task": (sample.metadata or {}).get("task_name", str(sample.id)),
               "suite": (sample.metadata or {}).get("suite"),
               "task_digest": (sample.metadata or {}).get("task_digest"),
               "epoch": sample.epoch, "result": result})
