"""One round's factory config: the template with the policy roles on the round's model and the
evaluated tasks added to the contamination guard.

The config is written to `round-N/factory.yaml` (loadable by `rsr factory status`); the served
model's URL is added in memory only (`models.served`), because a CPU server's port lives as long
as the process and is no part of what the round means (the factory's digest ignores it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rsr.factory.config import ROLES, FactoryConfig
from rsr.rounds.config import RoundsConfig
from rsr.rounds.serve import Served


def round_factory(cfg: RoundsConfig, template: FactoryConfig, out: Path,
                  evaluated: dict[str, Path], policy: Served | None) -> FactoryConfig:
    """The template for one round: output in `out`, policy roles played by `policy` (None:
    the template's models), the evaluated tasks guarded at export."""
    fc = template.model_copy(deep=True)
    fc.name = f"{template.name}:{out.parent.name}"
    fc.output_dir = out
    # Roles the template leaves to its base model keep that model, whoever plays discovery.
    roles = {role: template.models.for_role(role) for role in ROLES}
    if policy is not None:
        if "discovery" in cfg.policy_roles:
            fc.models.model = policy.model
        for role in ROLES:
            if role in cfg.policy_roles:
                roles[role] = policy.model
        fc.models.served = {**fc.models.served, policy.model: policy.model_args}
    fc.models.roles = roles
    guarded = {p.resolve() for p in fc.export.eval_paths}
    fc.export.eval_paths += [d for d in evaluated.values() if d not in guarded]
    if not cfg.eval.tasks and cfg.eval.suite not in fc.export.eval_suites:
        fc.export.eval_suites.append(cfg.eval.suite)  # the whole suite is evaluated
    fc.source_path = template.source_path
    return fc


def write_round_factory(fc: FactoryConfig, path: Path) -> Path:
    data: dict[str, Any] = fc.model_dump(mode="json")
    data["models"].pop("served", None)
    path.parent.mkdir(parents=True, exist_ok=True)
    note = ("# Written by `rsr rounds` for one round (the served model's URL is added at run "
            "time).\n")
    path.write_text(note + yaml.safe_dump(data, sort_keys=False))
    return path
