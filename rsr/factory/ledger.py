"""The factory's ledger: Inspect `.eval` logs per stage, plus the derived stage files.

Every unit of work (a rollout, a planning sample, an execution, an audit) is an Inspect sample
with a stable id. A stage run first reads the samples already completed in its log folder and
runs only the missing ones, so an interrupted run resumes without losing or repeating work; the
stage files (`stages/*.jsonl`) are always rebuilt from the logs, keyed by sample id.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, EvalSample, read_eval_log, read_eval_log_samples
from inspect_ai.model import Model, get_model

from rsr.errors import RsrError
from rsr.factory.config import ROLES, FactoryConfig, Role
from rsr.interrupts import RunInterrupted, interruptible

EXCLUDE_FIELDS = {"events", "events_data", "timelines"}


class FactoryInterrupted(RunInterrupted):
    """A stage was interrupted (Ctrl-C, SIGTERM); its finished samples stay in the ledger."""


@dataclass(frozen=True)
class FactoryPaths:
    root: Path
    fingerprints: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    """stage -> the fingerprint of the configuration running now (rsr.factory.provenance): only
    work logged under it is reused. Empty (status, reports): every finished sample counts."""

    def logs(self, stage: str) -> Path:
        return self.root / "logs" / stage

    def done(self, stage: str, require_score: bool = True) -> dict[str, LoggedSample]:
        """The stage's finished samples that this configuration may reuse."""
        return completed_samples(self.logs(stage), require_score, self.fingerprints.get(stage))

    def stage_file(self, name: str) -> Path:
        return self.root / "stages" / f"{name}.jsonl"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def dataset_dir(self) -> Path:
        return self.root / "dataset"

    @property
    def dataset_jsonl(self) -> Path:
        return self.root / "dataset.jsonl"


@dataclass
class LoggedSample:
    sample: EvalSample
    log: Path


def sample_key(sample_id: str | int, epoch: int) -> str:
    return f"{sample_id}@{epoch}"


def log_fingerprint(path: Path) -> str | None:
    """The configuration fingerprint a stage log was produced under (None: not recorded)."""
    from rsr.factory.provenance import METADATA_KEY

    header = read_eval_log(path, header_only=True)
    recorded = (header.eval.metadata or {}).get(METADATA_KEY)
    return recorded.get("fingerprint") if isinstance(recorded, dict) else None


def completed_samples(log_dir: Path, require_score: bool = True,
                      fingerprint: str | None = None) -> dict[str, LoggedSample]:
    """Finished samples (no error; scored when required) in every log of a folder; with
    `fingerprint`, only in logs produced under that configuration (rsr.factory.provenance).

    Logs of interrupted runs are read too: Inspect flushes each finished sample into the
    `.eval` file, so their completed samples count and only the rest is run again.
    """
    done: dict[str, LoggedSample] = {}
    if not log_dir.is_dir():
        return done
    for path in sorted(log_dir.glob("*.eval"), key=lambda p: p.stat().st_mtime):
        try:
            if fingerprint is not None and log_fingerprint(path) != fingerprint:
                continue  # another configuration's work: never relabelled as this one's
            samples = list(read_eval_log_samples(path, all_samples_required=False,
                                                 resolve_attachments=True,
                                                 exclude_fields=EXCLUDE_FIELDS))
        except Exception:  # a log cut off before its header was written holds nothing usable
            continue
        for sample in samples:
            if sample.error is not None or (require_score and not sample.scores):
                continue
            done.setdefault(sample_key(sample.id, sample.epoch), LoggedSample(sample, path))
    return done


def unfinished_samples(log_dir: Path) -> dict[str, str]:
    """Samples that errored or were cut off and have not finished since: key -> last error."""
    done = completed_samples(log_dir)
    failed: dict[str, str] = {}
    if not log_dir.is_dir():
        return failed
    for path in sorted(log_dir.glob("*.eval"), key=lambda p: p.stat().st_mtime):
        try:
            samples = list(read_eval_log_samples(path, all_samples_required=False,
                                                 exclude_fields=EXCLUDE_FIELDS | {"messages"}))
        except Exception:  # unreadable partial log: nothing to report from it
            continue
        for sample in samples:
            key = sample_key(sample.id, sample.epoch)
            if key not in done and sample.error is not None:
                failed[key] = sample.error.message.splitlines()[0][:200]
    return failed


def role_models(cfg: FactoryConfig) -> dict[Role, Model]:
    names = {role: cfg.models.for_role(role) for role in ROLES}
    return {role: get_model(name, **cfg.models.args_for(name)) for role, name in names.items()}


def base_model(cfg: FactoryConfig) -> Model:
    return get_model(cfg.models.model, **cfg.models.args_for(cfg.models.model))


# The models each stage creates (the stages that run evals with roles create every role's).
_STAGE_MODELS = {"discover": ("base",), "plan": ("base", *ROLES), "execute": ("base", *ROLES),
                 "filter": ("base", *ROLES)}


def check_models(cfg: FactoryConfig, stages: Sequence[str]) -> None:
    """Create every model the stages will use, before any of them runs, so a typo'd provider,
    role or missing key stops the run at once with the config field that names it."""
    from rsr.errors import RsrError

    _load_providers(cfg)
    needed = {who for stage in stages for who in _STAGE_MODELS.get(stage, ())}
    where = f"{cfg.source_path}: " if cfg.source_path else ""
    for who in ("base", *ROLES):
        if who not in needed:
            continue
        name = cfg.models.model if who == "base" else cfg.models.for_role(who)  # type: ignore[arg-type]
        field = "models.model" if who == "base" or who not in cfg.models.roles else f"models.roles.{who}"
        try:
            get_model(name, **cfg.models.args_for(name))
        except Exception as e:  # unknown provider, missing API key or fixture, ...
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RsrError(f"{where}{field}: model {name!r} cannot be used: {first}") from e


def _load_providers(cfg: FactoryConfig) -> None:
    names = [cfg.models.model, *cfg.models.roles.values()]
    if any(n.startswith("rsr-scripted/") for n in names):
        import rsr.factory.scripted  # noqa: F401  (registers the provider)


def run_eval(cfg: FactoryConfig, tasks: Sequence[Task], log_dir: Path, model: Model | str,
             roles: bool = False, sandboxed: bool = True) -> list[EvalLog]:
    """Run Inspect tasks into a stage's log folder with the factory's concurrency settings."""
    _load_providers(cfg)
    if not tasks:
        return []
    log_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(model, str):
        model = get_model(model, **cfg.models.args_for(model))
    from rsr.factory.provenance import METADATA_KEY, stage_fingerprints, stage_inputs

    stage = log_dir.name
    recorded = {METADATA_KEY: {"stage": stage, "fingerprint": stage_fingerprints(cfg).get(stage),
                               "inputs": stage_inputs(cfg).get(stage)}}
    conc = cfg.concurrency
    logs: list[EvalLog] = []
    with interruptible() as stop:  # SIGTERM as Ctrl-C: Inspect cancels and writes the logs
        logs = inspect_eval(
            list(tasks), model=model, model_roles=role_models(cfg) if roles else None,
            log_dir=str(log_dir), log_format="eval", log_buffer=1,
            display="rich" if cfg.display == "inspect" else "none",
            max_samples=conc.max_samples, max_sandboxes=conc.max_sandboxes if sandboxed else None,
            fail_on_error=False, retry_on_error=conc.retry_on_error or None, score_display=False,
            metadata=recorded)
    # A Ctrl-C makes Inspect cancel the run and return (not raise): stop the factory here, so
    # that no later round or stage decides anything from a partial ledger.
    if (stop.signum is not None or len(logs) < len(tasks)
            or any(log.status in ("cancelled", "started") for log in logs)):
        signum = stop.signum or signal.SIGINT
        raise FactoryInterrupted(f"interrupted by {signal.Signals(signum).name}; finished "
                                 f"samples are kept in {log_dir}: run the same command again to "
                                 "resume", signum)
    for log in logs:
        if log.status == "error":
            raise RsrError(f"{log_dir}: stage eval failed: {log.error.message if log.error else '?'}"
                           f" (open the log with `inspect view --log-dir {log_dir}`)")
    return logs


def sample_tokens(sample: EvalSample) -> int:
    return sum(u.total_tokens for u in (sample.model_usage or {}).values())


def sample_seconds(sample: EvalSample) -> float:
    return float(sample.total_time or 0.0)


@dataclass
class StageCost:
    rollouts: int = 0
    samples: int = 0
    tokens: int = 0
    sandbox_seconds: float = 0.0

    def add(self, sample: EvalSample, sandboxed: bool) -> None:
        self.samples += 1
        self.tokens += sample_tokens(sample)
        if sandboxed:
            self.rollouts += 1
            self.sandbox_seconds += sample_seconds(sample)


@dataclass
class State:
    """`state.json`: which stages finished, with what config, and what they cost."""

    config_digest: str = ""
    finished: dict[str, str] = field(default_factory=dict)
    costs: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> State:
        if not path.is_file():
            return cls()
        data = json.loads(path.read_text())
        return cls(**data)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.__dict__, indent=2, sort_keys=True) + "\n")
        tmp.replace(path)


def spent(state: State) -> StageCost:
    total = StageCost()
    for cost in state.costs.values():
        total.rollouts += int(cost.get("rollouts", 0))
        total.tokens += int(cost.get("tokens", 0))
        total.sandbox_seconds += float(cost.get("sandbox_seconds", 0.0))
    return total


def budget_left(cfg: FactoryConfig, state: State) -> tuple[int | None, str | None]:
    """Rollouts still allowed (None = unlimited) and the budget that is exhausted, if any."""
    used = spent(state)
    b = cfg.budgets
    if b.max_tokens is not None and used.tokens >= b.max_tokens:
        return 0, f"token budget ({b.max_tokens}) spent"
    if b.max_sandbox_minutes is not None and used.sandbox_seconds / 60 >= b.max_sandbox_minutes:
        return 0, f"sandbox budget ({b.max_sandbox_minutes} min) spent"
    if b.max_rollouts is not None:
        left = b.max_rollouts - used.rollouts
        return max(left, 0), (f"rollout budget ({b.max_rollouts}) spent" if left <= 0 else None)
    return None, None
