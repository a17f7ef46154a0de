"""Export validated runs in the Terminal-Bench 2 leaderboard submission layout.

    submissions/terminal-bench/2.0/<agent>__<model>/
      metadata.yaml                 agent and model display info
      <job>/config.json             the job: dataset, attempts, agent, no overrides
      <job>/result.json             job summary (trials, mean reward)
      <job>/<task>__<trial>/result.json     one Harbor TrialResult per (task, epoch)
      <job>/<task>__<trial>/agent/messages.json       the trial's transcript
      <job>/<task>__<trial>/verifier/test-output.txt  the verifier's output

The fields follow Harbor's TrialResult/TrialConfig models (task_name, trial_name, task_checksum,
config.timeout_multiplier = 1.0, no override_* fields set, agent_info, verifier_result.rewards,
exception_info). Only logs that pass `validate_log` are exported.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from rsr.report.leaderboard import ValidatedRun, slug
from rsr.report.logs import SCORER

__all__ = ["ModelInfo", "SubmissionMetadata", "export_terminal_bench", "split_model"]

DATASET = "terminal-bench"
DATASET_VERSION = "2.0"


class ModelInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_name: str
    model_provider: str
    model_display_name: str
    model_org_display_name: str


class SubmissionMetadata(BaseModel):
    """`metadata.yaml` of a TB2 leaderboard submission (all fields required there)."""

    model_config = ConfigDict(extra="forbid")

    agent_url: str
    agent_display_name: str
    agent_org_display_name: str
    models: list[ModelInfo]


HARNESS_LABEL = ("harness", "harness_implementation", "prompt_pack", "prompt_pack_sha256",
                 "parity_mode", "fixes")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def split_model(model: str) -> tuple[str, str]:
    """Inspect `provider/name` (or `openai-api/provider/name`) -> (provider, name)."""
    parts = model.split("/")
    if len(parts) >= 3 and parts[0] == "openai-api":
        return parts[1], "/".join(parts[2:])
    if len(parts) >= 2:
        return parts[0], "/".join(parts[1:])
    return "unknown", model


def _usage(sample: Any) -> dict[str, int | None]:
    usage = list((sample.model_usage or {}).values())
    return {
        "n_input_tokens": sum(u.input_tokens for u in usage),
        "n_cache_tokens": sum((u.input_tokens_cache_read or 0) for u in usage),
        "n_output_tokens": sum(u.output_tokens for u in usage),
        "cost_usd": None,
    }


def export_terminal_bench(
    runs: list[ValidatedRun],
    out: Path,
    *,
    metadata: SubmissionMetadata,
    agent_name: str,
    agent_version: str,
) -> Path:
    """Write the submission folder for these runs; returns `<agent>__<model>/`."""
    from inspect_ai.log import read_eval_log

    model = runs[0].run.model
    provider, model_name = split_model(model)
    root = (out / "submissions" / DATASET / DATASET_VERSION /
            f"{_safe(agent_name)}__{_safe(model_name)}")
    root.mkdir(parents=True, exist_ok=True)
    (root / "metadata.yaml").write_text(
        yaml.safe_dump(metadata.model_dump(), sort_keys=False, allow_unicode=True))
    for v in runs:
        log = read_eval_log(str(v.run.path), resolve_attachments=True)  # messages as text, not refs
        job_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"rsr:{v.log.eval_id}"))
        job_name = f"{slug(v.run.benchmark)}-{v.log.created[:19].replace(':', '-')}"
        job = root / _safe(job_name)
        job.mkdir(parents=True, exist_ok=True)
        agent_cfg = {"name": agent_name, "model_name": f"{provider}/{model_name}",
                     "override_timeout_sec": None, "override_setup_timeout_sec": None,
                     "max_timeout_sec": None, "kwargs": dict(log.eval.solver_args or {})}
        # Which implementation and wording ran (an rsr-wording run is no Harbor Terminus 2 run).
        harness = next((x.store["rsr_harness"] for x in log.samples or []
                        if "rsr_harness" in x.store), {})
        agent_cfg["kwargs"].update({k: harness[k] for k in HARNESS_LABEL if k in harness})
        env_cfg = {"type": "docker", "override_cpus": None, "override_memory_mb": None,
                   "override_storage_mb": None, "override_gpus": None}
        verifier_cfg = {"override_timeout_sec": None, "max_timeout_sec": None}
        (job / "config.json").write_text(json.dumps({
            "job_name": job_name, "jobs_dir": str(root), "n_attempts": v.run.epochs,
            "timeout_multiplier": 1.0, "agents": [agent_cfg], "environment": env_cfg,
            "verifier": verifier_cfg,
            "datasets": [{"name": DATASET, "version": DATASET_VERSION}],
            "rsr": {"log": v.log.model_dump(), "suite_digest": v.suite_digest},
        }, indent=2))
        rewards: list[float] = []
        for sample in log.samples or []:
            meta = sample.metadata or {}
            task_name = str(meta.get("task_name") or sample.id)
            trial_name = f"{task_name[:32].rstrip('_-')}__{_safe(str(sample.uuid or ''))[:7]}"
            trial_name += f"-e{sample.epoch}"
            trial_dir = job / trial_name
            (trial_dir / "agent").mkdir(parents=True, exist_ok=True)
            (trial_dir / "verifier").mkdir(exist_ok=True)
            score = (sample.scores or {}).get(SCORER)
            reward = float(score.value["reward"]) if score is not None else 0.0  # type: ignore[index]
            rewards.append(reward if sample.error is None else 0.0)
            exception = None
            if sample.error is not None:
                exception = {"exception_type": "EvalError",
                             "exception_message": sample.error.message,
                             "exception_traceback": sample.error.traceback,
                             "occurred_at": sample.completed_at}
            result = {
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"rsr:{sample.uuid}")),
                "task_name": task_name,
                "trial_name": trial_name,
                "trial_uri": trial_dir.resolve().as_uri(),
                "task_id": {"path": str(meta.get("task_dir", task_name))},
                "source": DATASET,
                "task_checksum": meta.get("task_digest"),
                "config": {
                    "task": {"path": str(meta.get("task_dir", task_name))},
                    "trial_name": trial_name, "trials_dir": str(job),
                    "timeout_multiplier": 1.0, "agent": agent_cfg, "environment": env_cfg,
                    "verifier": verifier_cfg, "job_id": job_id,
                },
                "agent_info": {"name": agent_name, "version": agent_version,
                               "model_info": {"name": model_name, "provider": provider}},
                "agent_result": _usage(sample),
                # As in Harbor, a trial that ended in an exception has no verifier result (an
                # errored sample rsr scores is a failure by the one rule, not a verdict).
                "verifier_result": None if score is None or sample.error is not None
                else {"rewards": {"reward": reward}},
                "exception_info": exception,
                "started_at": sample.started_at,
                "finished_at": sample.completed_at,
                "rsr": {"sample_id": str(sample.id), "epoch": sample.epoch,
                        "log": v.log.file, "score": score.value if score else None},
            }
            (trial_dir / "result.json").write_text(json.dumps(result, indent=2, default=str))
            (trial_dir / "agent" / "messages.json").write_text(json.dumps(
                [m.model_dump(mode="json", exclude_none=True) for m in sample.messages],
                indent=1))
            (trial_dir / "verifier" / "test-output.txt").write_text(
                (score.explanation or "") if score is not None else "")
        (job / "result.json").write_text(json.dumps({
            "id": job_id, "n_total_trials": len(rewards),
            "mean_reward": sum(rewards) / len(rewards) if rewards else None,
            "started_at": log.stats.started_at, "finished_at": log.stats.completed_at,
        }, indent=2, default=str))
    return root
