"""Which configuration produced a stage's work, so that reused work is work of this configuration.

Every stage eval records a fingerprint of what produced it (`rsr_factory` in the log's eval
metadata): the models of the roles that stage calls and their arguments, the harnesses and their
arguments, temperatures and limits, the prompts, and the fingerprint of the stage it reads (a
plan made from other rollouts is other work). A rerun into the same `output_dir` reuses a
finished sample only from logs with the current fingerprint; after any change the stage runs
again, and rows and the dataset card name the models the logs they came from record.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Any

from rsr.factory.config import FactoryConfig

__all__ = ["METADATA_KEY", "STAGE_OF_LOGS", "stage_fingerprints", "stage_inputs"]

METADATA_KEY = "rsr_factory"
"""Eval metadata key of a stage log: {"stage", "fingerprint", "inputs"}."""

# The stages that run evals; compress and export derive from these logs and add no model work.
STAGE_OF_LOGS = ("discover", "plan", "execute", "filter")


def _prompts_digest() -> str:
    h = hashlib.sha256()
    folder = resources.files("rsr.factory.prompts")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            h.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()


def _model(cfg: FactoryConfig, name: str) -> dict[str, Any]:
    # Where a model is served (`served` args: a base_url) is not what it is; its other args are.
    args = {k: v for k, v in cfg.models.args_for(name).items() if k not in ("base_url", "api_key")}
    return {"name": name, "args": args}


def stage_inputs(cfg: FactoryConfig) -> dict[str, dict[str, Any]]:
    """Per stage, the configuration its work depends on (without the upstream chain)."""
    role = {r: _model(cfg, cfg.models.for_role(r)) for r in ("planner", "critic", "executor", "auditor")}
    prompts = _prompts_digest()
    return {
        "discover": {"model": _model(cfg, cfg.models.model), "discovery": cfg.discovery.model_dump(mode="json"),
                     "integrity": cfg.integrity, "seed": cfg.seed},
        "plan": {"planner": role["planner"], "critic": role["critic"], "plan": cfg.plan.model_dump(mode="json"),
                 "prompts": prompts},
        "execute": {"executor": role["executor"], "execute": cfg.execute.model_dump(mode="json"),
                    "integrity": cfg.integrity, "prompts": prompts},
        "filter": {"auditor": role["auditor"], "filter": cfg.filter.model_dump(mode="json"), "prompts": prompts},
    }


def stage_fingerprints(cfg: FactoryConfig) -> dict[str, str]:
    """stage -> fingerprint of its inputs chained with the fingerprint of the stage before it."""
    out: dict[str, str] = {}
    upstream = ""
    for stage, inputs in stage_inputs(cfg).items():
        data = json.dumps({"upstream": upstream, "inputs": inputs}, sort_keys=True, default=str)
        upstream = out[stage] = hashlib.sha256(data.encode()).hexdigest()[:16]
    return out
