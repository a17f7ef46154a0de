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

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from rsr.errors import closest

SUPPORTED_SCHEMA_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4")


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
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*([kKmMgGtT]?)[iI]?[bB]?\s*", str(value))
    if not m:
        # Left as is, so the `*_mb` field reports it with its own name.
        return value
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
        return [key for key, _ in self.unknown_key_hints(prefix)]

    def unknown_key_hints(self, prefix: str = "") -> list[tuple[str, str | None]]:
        """Each unknown key (dotted path) with the known key of its table it most likely
        misspells, if one is close (`timeout_secs` -> `timeout_sec`)."""
        known = [f.alias or name for name, f in type(self).model_fields.items()]
        known += [name for name in type(self).model_fields if name not in known]
        keys = [(f"{prefix}{k}", closest(k, known)) for k in (self.model_extra or {})]
        for name, value in self:
            if isinstance(value, ForeignModel):
                keys.extend(value.unknown_key_hints(f"{prefix}{name}."))
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ForeignModel):
                        keys.extend(item.unknown_key_hints(f"{prefix}{name}[{i}]."))
        return keys


def unknown_key_warning(path: object, key: str, hint: str | None) -> str:
    where = key.rpartition(".")[0]
    meant = f" (did you mean '{where + '.' if where else ''}{hint}'?)" if hint else ""
    return f"{path}: unknown key '{key}'{meant}"


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
    version: str | None = None
    description: str | None = None
    authors: Annotated[list[Author], BeforeValidator(_authors)] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _org_slash_name(cls, v: str | None) -> str | None:
        # Harbor refuses a task whose name is not "org/name".
        if v is not None and (not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*", v)
                              or ".." in v):
            raise ValueError(f"expected 'org/name' (letters, digits, . _ -), got {v!r}")
        return v


def _positive(v: float | None) -> float | None:
    if v is not None and not v > 0:
        raise ValueError(f"must be > 0, got {v}")
    return v


def _non_negative(v: int | None) -> int | None:
    if v is not None and v < 0:
        raise ValueError(f"must be >= 0, got {v}")
    return v


PositiveFloat = Annotated[float, AfterValidator(_positive)]
PositiveInt = Annotated[IntLike, AfterValidator(_positive)]
NonNegativeInt = Annotated[IntLike, AfterValidator(_non_negative)]

NetworkMode = Literal["no-network", "public", "allowlist"]
"""Harbor's per-environment network policy; `allow_internet` is its legacy spelling."""


def _network_mode(value: Any) -> Any:
    # Older corpora spell the public mode as a Docker network name.
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("bridge", "host", "internet", "default"):
            return "public"
        if v in ("none", "no_network", "offline"):
            return "no-network"
        return v
    return value


class NetworkFields(ForeignModel):
    network_mode: Annotated[NetworkMode | None, BeforeValidator(_network_mode)] = None
    allowed_hosts: list[str] | None = None


class HealthcheckSection(ForeignModel):
    """`[environment.healthcheck]`: a command that must pass before the agent starts."""

    command: str
    interval_sec: PositiveFloat = 5.0
    timeout_sec: PositiveFloat = 30.0
    start_period_sec: float = 0.0
    start_interval_sec: PositiveFloat = 5.0
    retries: PositiveInt = 3


class TpuSection(ForeignModel):
    type: str
    topology: str


class MCPServerSection(ForeignModel):
    """`[[environment.mcp_servers]]`: a tool server offered to the agent."""

    name: str
    transport: Literal["stdio", "sse", "streamable-http", "http"] = "sse"
    url: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _transport_fields(self) -> MCPServerSection:
        if self.transport in ("sse", "streamable-http", "http") and not self.url:
            raise ValueError(f"'url' is required for transport {self.transport!r}")
        if self.transport == "stdio" and not self.command:
            raise ValueError("'command' is required for transport 'stdio'")
        return self


class ArtifactSection(ForeignModel):
    """One `artifacts` entry: a file or directory collected from a service after the agent."""

    source: str
    destination: str | None = None
    exclude: list[str] = Field(default_factory=list)
    service: str | None = None


def _artifacts(value: Any) -> Any:
    if isinstance(value, list):
        return [{"source": v} if isinstance(v, str) else v for v in value]
    return value


Artifacts = Annotated[list[ArtifactSection], BeforeValidator(_artifacts)]


class CollectSection(ForeignModel):
    """`[[verifier.collect]]`: a command run in a service after the agent, before artifacts."""

    command: str
    service: str = "main"
    timeout_sec: PositiveFloat = 60.0
    user: str | int | None = None


class AgentSection(NetworkFields):
    timeout_sec: PositiveFloat = 600.0
    user: str | int | None = None


def _stringify(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): (str(x).lower() if isinstance(x, bool) else str(x)) for k, x in v.items()}
    return v


class EnvironmentSection(NetworkFields):
    build_timeout_sec: PositiveFloat = 600.0
    docker_image: str | None = None
    os: Annotated[Literal["linux", "windows"], BeforeValidator(lambda v: v.lower() if isinstance(v, str) else v)] = "linux"
    # Harbor leaves cpus/memory unlimited when omitted; rsr caps them (see parity.py).
    cpus: PositiveFloat = 1.0
    memory_mb: PositiveInt = 2048
    storage_mb: PositiveInt = 10240
    gpus: NonNegativeInt = 0
    gpu_types: list[str] | None = None
    tpu: TpuSection | None = None
    mcp_servers: list[MCPServerSection] = Field(default_factory=list)
    skills_dir: str | None = None
    healthcheck: HealthcheckSection | None = None
    # Harbor's default: a task has the internet unless it says otherwise.
    allow_internet: bool = True
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_sizes(cls, data: Any) -> Any:
        # Harbor 1.0 wrote `memory = "2G"` and `storage = "10G"`.
        if isinstance(data, dict):
            data = dict(data)
            if "memory" in data and "memory_mb" not in data:
                data["memory_mb"] = _size_to_mb(data.pop("memory"))
            if "storage" in data and "storage_mb" not in data:
                data["storage_mb"] = _size_to_mb(data.pop("storage"))
        return data

    @model_validator(mode="after")
    def _network_policy(self) -> EnvironmentSection:
        # As in Harbor, an explicit network_mode wins over the legacy allow_internet flag, and
        # the flag is kept equal to "is this environment on the internet".
        if self.network_mode is not None:
            self.allow_internet = self.network_mode == "public"
        if self.allowed_hosts and self.network_mode != "allowlist":
            raise ValueError("allowed_hosts is only valid with network_mode = 'allowlist'")
        return self

    @field_validator("env", mode="before")
    @classmethod
    def _stringify_env(cls, v: Any) -> Any:
        return _stringify(v)

    def explicitly_set(self, name: str) -> bool:
        return name in self.model_fields_set


class VerifierSection(NetworkFields):
    timeout_sec: PositiveFloat = 600.0
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    environment_mode: Literal["shared", "separate"] | None = None
    environment: EnvironmentSection | None = None
    collect: list[CollectSection] = Field(default_factory=list)
    # Fields of rsr's (Harbor ignores them): how the verifier may run and what it may accept.
    isolation: Literal["snapshot", "fresh", "live"] = "snapshot"
    """snapshot: tests run in a new container made from the agent's final filesystem, joined to
    its network namespace (servers the agent left running stay reachable); fresh: the same
    without the network link (tests that start and stop the services themselves); live: in the
    agent's own container, for tests that inspect the agent's processes (Harbor's way)."""
    allow_changes: list[str] | None = None
    """Globs of system paths the task's deliverable may change (integrity audit). Declaring the
    field, even empty, makes the audit strict for the task."""
    allow_ptrace: bool = False
    """The tests trace processes (LeakSanitizer, gdb, strace): strict mode's seccomp boundary
    lets ptrace through for this task. The checker kit still keeps the checker out of reach
    (non-dumpable, deliverables without capabilities), which the kernel enforces."""
    reward_range: tuple[float, float] | None = None

    @field_validator("env", mode="before")
    @classmethod
    def _stringify_env(cls, v: Any) -> Any:
        return _stringify(v)

    @model_validator(mode="after")
    def _mode_matches_environment(self) -> VerifierSection:
        if self.environment_mode == "shared" and self.environment is not None:
            raise ValueError("environment_mode = 'shared' conflicts with a [verifier.environment] table")
        return self

    @property
    def mode(self) -> Literal["shared", "separate"]:
        """Where the tests run: Harbor infers 'separate' from a verifier environment table."""
        if self.environment_mode is not None:
            return self.environment_mode
        return "separate" if self.environment is not None else "shared"


class SolutionSection(ForeignModel):
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("env", mode="before")
    @classmethod
    def _stringify_env(cls, v: Any) -> Any:
        return _stringify(v)


class StepSection(ForeignModel):
    """One step of a multi-step task (`[[steps]]`); its files live in `steps/<name>/`."""

    name: str
    agent: AgentSection = Field(default_factory=AgentSection)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    min_reward: float | dict[str, float] | None = None
    healthcheck: HealthcheckSection | None = None
    artifacts: Artifacts = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _portable_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", v) or v in (".", ".."):
            raise ValueError(f"step name {v!r} must be a portable directory name (letters, digits, . _ -)")
        return v


class TaskConfig(ForeignModel):
    """`task.toml` (Harbor schemas 1.0-1.4 and the legacy `version` key)."""

    schema_version: str = "1.0"
    task: TaskSection = Field(default_factory=TaskSection)
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    agent: AgentSection = Field(default_factory=AgentSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    solution: SolutionSection = Field(default_factory=SolutionSection)
    source: str | None = None
    multi_step_reward_strategy: Literal["mean", "final"] | None = None
    steps: list[StepSection] = Field(default_factory=list)
    artifacts: Artifacts = Field(default_factory=list)
    reward: dict[str, Any] = Field(default_factory=dict)
    """Seen in published corpora; Harbor 0.26 ignores it, and so does rsr."""

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

    @field_validator("steps")
    @classmethod
    def _unique_steps(cls, steps: list[StepSection]) -> list[StepSection]:
        seen: set[str] = set()
        for step in steps:
            key = step.name.casefold()
            if key in seen:
                raise ValueError(f"step names must be unique: {step.name!r}")
            seen.add(key)
        return steps

    def version_warnings(self) -> list[str]:
        if self.schema_version in SUPPORTED_SCHEMA_VERSIONS or _version_key(self.schema_version) < _version_key(
                SUPPORTED_SCHEMA_VERSIONS[-1]):
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


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


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


TB1_PARSERS = ("pytest", "swebench", "long_cli", "mlebench")
"""The Terminal-Bench 1 `parser_name`s rsr scores (rsr/verify/tb1_parsers.py); others are refused."""


class TB1TaskConfig(ForeignModel):
    """Terminal-Bench 1 `task.yaml`; migrated to `TaskConfig` by `to_task_config`."""

    instruction: str | None = None
    descriptions: list[dict[str, Any]] | None = None
    author_name: str | None = None
    author_email: str | None = None
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    # TB1 scored every task with a parser of the test output; pytest's when none is named.
    parser_name: str = "pytest"
    # LongCLI's per-set scoring modes ("pytest" or "text") for fail-to-pass / pass-to-pass.
    parser_results_f2p: str | None = None
    parser_results_p2p: str | None = None
    max_agent_timeout_sec: PositiveFloat = 360.0
    max_test_timeout_sec: PositiveFloat = 60.0
    run_tests_in_same_shell: bool = False
    expert_time_estimate_min: float | None = None
    junior_time_estimate_min: float | None = None

    @field_validator("parser_name", mode="before")
    @classmethod
    def _known_parser(cls, v: Any) -> Any:
        if v is None:
            return "pytest"
        if isinstance(v, str) and v.strip().lower() not in TB1_PARSERS:
            raise ValueError(f"unknown Terminal-Bench 1 parser {v!r}; rsr scores with: {', '.join(TB1_PARSERS)}")
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("parser_results_f2p", "parser_results_p2p", mode="before")
    @classmethod
    def _known_mode(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip():
            if v.strip().lower() not in ("pytest", "text"):
                raise ValueError(f"expected 'pytest' or 'text', got {v!r}")
            return v.strip().lower()
        return None if v in ("", None) else v

    def resolved_instruction(self) -> str | None:
        if self.instruction:
            return self.instruction
        for d in self.descriptions or []:
            if d.get("key", "base") == "base" and d.get("description"):
                return str(d["description"])
        return None

    def to_task_config(self, name: str) -> TaskConfig:  # noqa: ARG002 - Harbor gives migrated tasks no package name
        metadata: dict[str, Any] = {"tags": self.tags, "migrated_from": "terminal-bench-1"}
        for key in ("author_name", "author_email", "difficulty", "category", "parser_name",
                    "parser_results_f2p", "parser_results_p2p", "run_tests_in_same_shell",
                    "expert_time_estimate_min", "junior_time_estimate_min"):
            value = getattr(self, key)
            if value is not None:
                metadata[key] = value
        return TaskConfig(
            schema_version="1.0",
            task=TaskSection(),
            metadata=metadata,
            verifier=VerifierSection(timeout_sec=self.max_test_timeout_sec),
            agent=AgentSection(timeout_sec=self.max_agent_timeout_sec),
        )


TaskFormat = Literal["harbor", "terminal-bench-1"]
