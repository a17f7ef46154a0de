"""Typed models of the foreign task formats: Harbor `task.toml`, `dataset.toml`, and the
Terminal-Bench 1 `task.yaml`.

These are *foreign* formats, so unknown keys are accepted (newer Harbor versions add keys)
and collected as warnings that `rsr tasks lint` prints; a typo is visible, a newer corpus
still loads. Real corpora write floats where ints belong and leave tables empty; both load.
"""

from __future__ import annotations

import math
import os
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

SUPPORTED_SCHEMA_VERSIONS = ("1.0", "1.1", "1.2")


def _int_like(value: Any) -> Any:
    # Real task.toml files say `cpus = 2.0` or `memory_mb = 4096.0`.
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\d+(\.0+)?\s*", value):
        return int(float(value))
    return value


IntLike = Annotated[int, BeforeValidator(_int_like)]


def _size_to_mb(value: Any) -> Any:
    """Parse legacy sizes such as "2G", "512M", "1.5g" into megabytes."""
    if value is None or isinstance(value, int | float):
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)[iI]?[bB]?\s*", str(value))
    if not m:
        raise ValueError(f"cannot parse size {value!r} (expected e.g. '2G', '512M')")
    number, unit = float(m.group(1)), m.group(2).lower()
    factor = {"": 1 / (1024 * 1024), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[unit]
    if unit == "":
        # A bare number in a legacy size field is megabytes in practice, not bytes.
        factor = 1
    return int(number * factor)


class ForeignModel(BaseModel):
    """Accepts unknown keys; `unknown_keys()` lists them for lint warnings."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def unknown_keys(self, prefix: str = "") -> list[str]:
        keys = [f"{prefix}{k}" for k in (self.model_extra or {})]
        for name, value in self:
            if isinstance(value, ForeignModel):
                keys.extend(value.unknown_keys(f"{prefix}{name}."))
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ForeignModel):
                        keys.extend(item.unknown_keys(f"{prefix}{name}[{i}]."))
        return keys


class Author(ForeignModel):
    name: str | None = None
    email: str | None = None


def _authors(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"name": value}]
    if isinstance(value, list):
        return [{"name": v} if isinstance(v, str) else v for v in value]
    return value


class TaskSection(ForeignModel):
    name: str | None = None
    description: str | None = None
    authors: Annotated[list[Author], BeforeValidator(_authors)] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class VerifierSection(ForeignModel):
    timeout_sec: float = 600.0
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None
    # Fields of rsr's (Harbor ignores them): how the verifier may run and what it may accept.
    isolation: Literal["snapshot", "fresh", "live"] = "snapshot"
    """snapshot: tests run in a new container made from the agent's final filesystem, joined to
    its network namespace (servers the agent left running stay reachable); fresh: the same
    without the network link (tests that start and stop the services themselves); live: in the
    agent's own container, for tests that inspect the agent's processes (Harbor's way)."""
    allow_changes: list[str] | None = None
    """Globs of system paths the task's deliverable may change (integrity audit). Declaring the
    field, even empty, makes the audit strict for the task."""
    reward_range: tuple[float, float] | None = None

    @field_validator("env", mode="before")
    @classmethod
    def _stringify_env(cls, v: Any) -> Any:
        return _stringify(v)


class AgentSection(ForeignModel):
    timeout_sec: float = 600.0
    user: str | None = None


def _stringify(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): (str(x).lower() if isinstance(x, bool) else str(x)) for k, x in v.items()}
    return v


class EnvironmentSection(ForeignModel):
    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    cpus: float = 1.0
    memory_mb: IntLike = 2048
    storage_mb: IntLike = 10240
    gpus: IntLike = 0
    allow_internet: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_sizes(cls, data: Any) -> Any:
        # Harbor 1.0 wrote `memory = "2G"` and `storage = "10G"`; newer corpora say
        # `network_mode = "public"` where older ones say `allow_internet = true`.
        if isinstance(data, dict):
            data = dict(data)
            mode = data.get("network_mode")
            if isinstance(mode, str) and "allow_internet" not in data:
                data["allow_internet"] = mode.lower() in ("public", "bridge", "host", "internet")
            if "memory" in data and "memory_mb" not in data:
                data["memory_mb"] = _size_to_mb(data.pop("memory"))
            if "storage" in data and "storage_mb" not in data:
                data["storage_mb"] = _size_to_mb(data.pop("storage"))
        return data

    @field_validator("env", mode="before")
    @classmethod
    def _stringify_env(cls, v: Any) -> Any:
        return _stringify(v)

    @field_validator("cpus")
    @classmethod
    def _positive_cpus(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("must be > 0")
        return v

    @field_validator("memory_mb")
    @classmethod
    def _positive_memory(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be > 0")
        return v


class SolutionSection(ForeignModel):
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("env", mode="before")
    @classmethod
    def _stringify_env(cls, v: Any) -> Any:
        return _stringify(v)


class StepSection(ForeignModel):
    """One step of a multi-step task (`[[steps]]`)."""

    name: str | None = None
    instruction: str | None = None
    agent: AgentSection | None = None
    verifier: VerifierSection | None = None


class TaskConfig(ForeignModel):
    """`task.toml` (Harbor schema 1.0, 1.1, 1.2, and the legacy `version` key)."""

    schema_version: str = "1.0"
    task: TaskSection = Field(default_factory=TaskSection)
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    agent: AgentSection = Field(default_factory=AgentSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    solution: SolutionSection = Field(default_factory=SolutionSection)
    steps: list[StepSection] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _legacy_version(cls, data: Any) -> Any:
        if isinstance(data, dict) and "version" in data and "schema_version" not in data:
            data = dict(data)
            data["schema_version"] = data.pop("version")
        return data

    @field_validator("schema_version", mode="before")
    @classmethod
    def _version_shape(cls, v: Any) -> str:
        # Published corpora already carry versions newer than we model (e.g. "2.0"); those load
        # (their new keys are kept as unknown-key warnings), only a malformed value is an error.
        v = str(v).strip()
        if not re.fullmatch(r"\d+(\.\d+){0,2}", v):
            raise ValueError(f"not a schema version: {v!r} (expected e.g. {SUPPORTED_SCHEMA_VERSIONS[-1]!r})")
        return v

    def version_warnings(self) -> list[str]:
        if self.schema_version in SUPPORTED_SCHEMA_VERSIONS:
            return []
        return [f"schema version {self.schema_version!r} is newer than the ones modelled "
                f"({', '.join(SUPPORTED_SCHEMA_VERSIONS)}); known fields are read, others kept as unknown keys"]

    @property
    def milestones(self) -> list[str]:
        value = self.metadata.get("milestones") or []
        return [str(m) for m in value] if isinstance(value, list) else []

    @property
    def category(self) -> str | None:
        value = self.metadata.get("category")
        return str(value) if value is not None else None

    @property
    def difficulty(self) -> str | None:
        value = self.metadata.get("difficulty")
        return str(value) if value is not None else None


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")


def expand_env(value: str, environ: dict[str, str] | None = None) -> str:
    """Expand `${VAR}` and `${VAR:-default}` against the host environment."""
    env = os.environ if environ is None else environ

    def sub(m: re.Match[str]) -> str:
        found = env.get(m.group(1))
        if found:
            return found
        return m.group(2) if m.group(2) is not None else ""

    return _ENV_REF.sub(sub, value)


class DatasetTaskRef(ForeignModel):
    name: str
    digest: str | None = None
    path: str | None = None
    git_url: str | None = None
    git_commit_id: str | None = None


class DatasetSection(ForeignModel):
    name: str | None = None
    version: str | None = None
    description: str | None = None


class DatasetConfig(ForeignModel):
    """`dataset.toml`: a named, versioned list of tasks pinned by digest."""

    dataset: DatasetSection = Field(default_factory=DatasetSection)
    tasks: list[DatasetTaskRef] = Field(default_factory=list)


class TB1SolutionStep(ForeignModel):
    command: str
    min_timeout_sec: float | None = None
    block: bool | None = None
    append_enter: bool | None = None


class TB1TaskConfig(ForeignModel):
    """Terminal-Bench 1 `task.yaml`; migrated to `TaskConfig` by `to_task_config`."""

    instruction: str | None = None
    descriptions: list[dict[str, Any]] | None = None
    author_name: str | None = None
    author_email: str | None = None
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    parser_name: str | None = None
    max_agent_timeout_sec: float = 360.0
    max_test_timeout_sec: float = 60.0
    run_tests_in_same_shell: bool | None = None
    expert_time_estimate_min: float | None = None
    junior_time_estimate_min: float | None = None

    def resolved_instruction(self) -> str | None:
        if self.instruction:
            return self.instruction
        for d in self.descriptions or []:
            if d.get("key", "base") == "base" and d.get("description"):
                return str(d["description"])
        return None

    def to_task_config(self, name: str) -> TaskConfig:
        metadata: dict[str, Any] = {"tags": self.tags, "migrated_from": "terminal-bench-1"}
        for key in ("author_name", "author_email", "difficulty", "category", "parser_name",
                    "expert_time_estimate_min", "junior_time_estimate_min"):
            value = getattr(self, key)
            if value is not None:
                metadata[key] = value
        return TaskConfig(
            schema_version="1.0",
            task=TaskSection(name=name),
            metadata=metadata,
            verifier=VerifierSection(timeout_sec=self.max_test_timeout_sec),
            agent=AgentSection(timeout_sec=self.max_agent_timeout_sec),
        )


TaskFormat = Literal["harbor", "terminal-bench-1"]
