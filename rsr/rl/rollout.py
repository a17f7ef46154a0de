"""GRPO rollouts through `inspect eval`: one sample per (task, group member), scored by the
rsr verifier in the task's sandbox, with every model call's token ids as the engine produced
them (`record_tokens="engine"`).

A rollout is turned into one TRL sequence without re-tokenising anything: the first call's
prompt ids are the prompt; each call's completion ids are model tokens (`env_mask` 1); the
tokens a later call's prompt adds after the previous prompt and completion (the terminal's
answer, rendered by the chat template) are environment tokens (`env_mask` 0). A later call
whose prompt does not extend the previous sequence token for token (the harness summarised,
or the sampled tokens render differently) ends the sequence there; it is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsr.harness.tokens import TokenCall, sample_token_calls
from rsr.rl.config import RLConfig


@dataclass
class Rollout:
    task: str
    calls: list[TokenCall]
    raw_reward: float
    reward: float
    """What training sees: raw_reward, except that no positive reward survives a sample whose
    integrity is not strictly clean (the integrity rule)."""
    integrity_ok: bool
    verdict: str
    error: str | None = None
    end_reason: str | None = None


@dataclass
class Sequence:
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    calls_used: int
    calls_dropped: int = 0
    sources: list[str] = field(default_factory=list)


def integrity_reward(value: float, integrity: dict[str, Any] | None) -> tuple[float, bool, str]:
    """The integrity rule: a positive reward needs a strict audit with a clean verdict; a
    tampered, unchecked (no audit ran) or merely warned sample keeps at most 0."""
    if not integrity:
        return min(value, 0.0), False, "unchecked"
    verdict = str(integrity.get("verdict", "unchecked"))
    ok = integrity.get("mode") == "strict" and verdict == "clean"
    return (value if ok else min(value, 0.0)), ok, verdict


def rollout_from_sample(sample: Any, reward_field: str) -> Rollout:
    """One finished `EvalSample` -> a `Rollout` (an errored or unscored sample earns 0)."""
    task = str((sample.metadata or {}).get("task_name") or str(sample.id).split("@")[0])
    calls = sample_token_calls(sample.store or {})
    result = (sample.store or {}).get("rsr_harness_result") or {}
    score = next(iter((sample.scores or {}).values()), None)
    infra = ((score.metadata or {}).get("infra") if score is not None else None) or None
    if score is None or not isinstance(score.value, dict) or infra:
        # Unscored, or scored as an infrastructure failure (rsr.verify.outcome): an error of the
        # run, not a verdict on the policy.
        error = (f"infra {infra.get('kind')}: {infra.get('message')}" if isinstance(infra, dict)
                 else str(sample.error.message) if sample.error else "sample was not scored")
        return Rollout(task, calls, 0.0, 0.0, False, "unchecked", error, result.get("end_reason"))
    raw = float(score.value.get(reward_field, 0.0))
    reward, ok, verdict = integrity_reward(raw, (score.metadata or {}).get("integrity"))
    return Rollout(task, calls, raw, reward, ok, verdict, None, result.get("end_reason"))


def stitch(calls: list[TokenCall], pad_id: int) -> Sequence:
    """The calls of one rollout as one prompt + completion with the environment masked."""
    usable = [c for c in calls if c.source != "unavailable" and c.prompt_ids]
    if not usable:
        # Nothing the model produced can be trained on: one masked token keeps the row.
        return Sequence([pad_id], [pad_id], [0.0], [0], 0, len(calls))
    first = usable[0]
    completion = list(first.completion_ids)
    logprobs = _logprobs(first)
    mask = [1] * len(completion)
    seen = first.prompt_ids + first.completion_ids
    used = 1
    for call in usable[1:]:
        if call.prompt_ids[: len(seen)] != seen:
            break
        env = call.prompt_ids[len(seen):]
        completion += env + call.completion_ids
        logprobs += [0.0] * len(env) + _logprobs(call)
        mask += [0] * len(env) + [1] * len(call.completion_ids)
        seen = call.prompt_ids + call.completion_ids
        used += 1
    return Sequence(list(first.prompt_ids), completion, logprobs, mask, used,
                    len(calls) - used, [c.source for c in usable[:used]])


def _logprobs(call: TokenCall) -> list[float]:
    # Recomputed calls carry no engine logprobs; TRL recomputes old logprobs itself anyway.
    return list(call.logprobs) if call.logprobs is not None else [0.0] * len(call.completion_ids)


def run_rollouts(cfg: RLConfig, tasks: list[str], base_url: str, log_dir: Path,
                 max_tokens: int | None = None) -> list[Rollout]:
    """One sample per entry of `tasks` (repeated names = a group), in that order."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai import task_with
    from inspect_ai.agent import as_solver
    from inspect_ai.dataset import MemoryDataset
    from inspect_ai.model import GenerateConfig, get_model

    from rsr.harness import rsrt, statem, terminus2
    from rsr.suites.inspect_tasks import suite_task, tasks_task

    names = sorted(set(tasks))
    s = cfg.suite
    if s.path is not None:
        base = tasks_task(s.name, s.path, names, s.exclude, sandbox=cfg.sandbox,
                          network=cfg.network, integrity="strict")
    else:
        base = suite_task(s.name, None, names, s.exclude, sandbox=cfg.sandbox,
                          network=cfg.network, integrity="strict", unpinned=s.unpinned)
    by_name = {str(smp.id): smp for smp in base.dataset}
    samples = [by_name[name].model_copy(update={"id": f"{name}@{i}"}, deep=True)
               for i, name in enumerate(tasks)]
    harness = {"terminus2": terminus2, "statem": statem, "rsrt": rsrt}[cfg.harness.name]
    agent = harness(**cfg.harness.args, temperature=cfg.grpo.temperature, record_tokens="engine")
    # The suite's own task with the repeated samples and the policy's harness: its set-up step
    # (the sandbox guard, the task's setup), scorer and error policy are those of every eval.
    task = task_with(base, dataset=MemoryDataset(samples, name=s.name), solver=as_solver(agent))
    model = get_model(f"rsr-vllm/{cfg.engine.served_model_name}", base_url=base_url,
                      config=GenerateConfig(max_tokens=max_tokens))
    logs = inspect_eval(task, model=model, max_samples=cfg.concurrency,
                        max_sandboxes=cfg.concurrency, display="none", log_dir=str(log_dir),
                        log_format="eval", fail_on_error=False, score=True)
    found = {str(smp.id): smp for smp in (logs[0].samples or [])}
    out = []
    for i, name in enumerate(tasks):
        smp = found.get(f"{name}@{i}")
        if smp is None:
            out.append(Rollout(name, [], 0.0, 0.0, False, "unchecked",
                               f"no sample in the log (status {logs[0].status})"))
        else:
            out.append(rollout_from_sample(smp, cfg.reward))
    return out
