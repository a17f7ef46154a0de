"""Task environment -> Helm values for the `inspect-k8s-sandbox` chart (`agent-env`).

The values are derived from the same compose document the Docker sandbox runs
(`rsr.sandbox.compose.compose_spec`), so both back ends agree on what a task gets: its image
(here the pushed, digest-pinned reference from the image map), cpus, memory, workdir, env,
the main service's keep-alive command, and no network unless the task allows internet.

Differences a Kubernetes pod forces, each deliberate:
- Without internet, the whole sandbox is one pod with `networkIsolated` (Docker's
  `network_mode: none`): sidecar services become extra containers of the main pod, so they
  share its loopback exactly as they share the main container's network namespace under
  Docker. With internet, every service is its own pod, found by its service name, and the
  chart's network policy allows egress to the world (`allowEntities: [world]`).
- The main container runs as root because the provider switches to the task's agent or
  verifier user per command with `runuser`, which only root may call; the compose `user` or
  the image's own USER (recorded at push time) becomes the default exec user, as with
  `docker exec`.
- `storage_mb` becomes a real `ephemeral-storage` limit (Docker could only advise it); the
  per-container pids limit has no pod-spec field (the kubelet's podPidsLimit sets it).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from rsr.errors import RsrError
from rsr.sandbox.compose import LOG_VOLUMES, MAIN_SERVICE, compose_spec
from rsr.sandbox.images import ImageMap, cache_base, missing_image_error, task_images
from rsr.tasks.load import LoadedTask

# Compose keys with no effect under Kubernetes that are safe to drop (the pod gives the same
# behaviour or the key only mattered to Docker's scheduler/builder).
_DROPPED_KEYS = {"build", "x-local", "x-default", "stop_signal", "stop_grace_period", "pids_limit", "extra_hosts",
                 "container_name", "hostname", "init", "restart", "tty", "stdin_open", "platform",
                 "labels", "expose", "ports", "networks", "network_mode", "links", "depends_on"}
_MAPPED_KEYS = {"image", "command", "entrypoint", "working_dir", "environment", "user", "cpus",
                "mem_limit", "deploy", "healthcheck"}


class _Values(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class EnvVar(_Values):
    name: str
    value: str


class Resources(_Values):
    limits: dict[str, str] = Field(default_factory=dict)
    requests: dict[str, str] = Field(default_factory=dict)


class SecurityContext(_Values):
    run_as_user: int | None = None
    run_as_group: int | None = None


class ExecProbe(_Values):
    command: list[str]


class ReadinessProbe(_Values):
    exec: ExecProbe
    initial_delay_seconds: int | None = None
    period_seconds: int | None = None
    timeout_seconds: int | None = None
    failure_threshold: int | None = None


class Container(_Values):
    """A sidecar in the main pod (`extraContainers`): a Kubernetes container spec."""

    name: str
    image: str
    command: list[str] | None = None
    args: list[str] = Field(default_factory=list)
    working_dir: str | None = None
    env: list[EnvVar] = Field(default_factory=list)
    resources: Resources | None = None
    security_context: SecurityContext | None = None
    readiness_probe: ReadinessProbe | None = None


class Service(_Values):
    image: str
    command: list[str] | None = Field(
        None, description="Overrides the image ENTRYPOINT; null keeps it (always written, so the "
                          "chart's default command for `default` never applies).")
    args: list[str] = Field(default_factory=list, description="Overrides the image CMD.")
    working_dir: str | None = None
    env: list[EnvVar] = Field(default_factory=list)
    resources: Resources | None = None
    security_context: SecurityContext | None = None
    readiness_probe: ReadinessProbe | None = None
    dns_record: bool = False
    additional_dns_records: list[str] = Field(default_factory=list)
    network_isolated: bool = False


class HelmValues(_Values):
    """The subset of the agent-env chart's values rsr sets; the chart supplies the rest."""

    services: dict[str, Service]
    extra_containers: list[Container] = Field(default_factory=list)
    allow_domains: list[str] = Field(default_factory=list)
    allow_entities: list[str] = Field(default_factory=list)

    def to_values(self) -> dict[str, Any]:
        data = self.model_dump(by_alias=True, exclude_none=True)
        for name, svc in self.services.items():
            dumped = data["services"][name]
            # `command: null` must be written: it deletes the chart's default command.
            data["services"][name] = {"image": dumped.pop("image"), "command": svc.command, **dumped}
        return data

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_values(), sort_keys=False)


# -- the chart --------------------------------------------------------------------------------

def _require_k8s_extra() -> None:
    try:
        import k8s_sandbox  # noqa: F401
    except ImportError as e:
        raise RsrError("the k8s sandbox needs the `k8s` extra: pip install 'rsr[k8s]' "
                       "(inspect-k8s-sandbox)") from e


def chart_dir() -> Path:
    """The agent-env chart shipped inside inspect-k8s-sandbox."""
    _require_k8s_extra()
    return Path(str(resources.files("k8s_sandbox") / "resources" / "helm" / "agent-env"))


@cache
def _chart_file(name: str) -> str:
    return (chart_dir() / name).read_text(encoding="utf-8")


def chart_schema() -> dict[str, Any]:
    return json.loads(_chart_file("values.schema.json"))


def chart_defaults() -> dict[str, Any]:
    return yaml.safe_load(_chart_file("values.yaml"))


def helm_merge(defaults: Any, override: Any) -> Any:
    """Helm's coalescing of user values over chart defaults: maps merge key by key, a null
    deletes the default, anything else (lists included) replaces it."""
    if not isinstance(defaults, dict) or not isinstance(override, dict):
        return override
    out = dict(defaults)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = value
    return out


def validate_values(values: dict[str, Any], where: str) -> None:
    """Validate values the way `helm install` will: merged over the chart's defaults, against
    the chart's values.schema.json. Failing here beats failing on the cluster per sample."""
    import jsonschema

    merged = helm_merge(chart_defaults(), values)
    errors = sorted(jsonschema.Draft7Validator(chart_schema()).iter_errors(merged),
                    key=lambda e: list(e.absolute_path))
    if errors:
        problems = "; ".join(f"{'.'.join(str(p) for p in e.absolute_path) or '<top>'}: {e.message}"
                             for e in errors[:5])
        raise RsrError(f"{where}: the generated Helm values fail the agent-env chart schema: {problems}")


# -- task -> values -------------------------------------------------------------------------

def _cpu_quantity(cpus: Any) -> str:
    value = float(cpus)
    return str(int(value)) if value == int(value) else f"{round(value * 1000)}m"


def _memory_quantity(value: Any) -> str:
    """Compose memory (`2048m`, `1g`, `512MiB`, bytes as int) -> a Kubernetes quantity."""
    if isinstance(value, int | float):
        return f"{max(1, int(value) // (1024 * 1024))}Mi"
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)i?b?\s*", str(value).lower())
    if not m:
        raise RsrError(f"cannot read memory size {value!r}")
    mib = float(m.group(1)) * {"b": 1 / 2**20, "": 1 / 2**20, "k": 1 / 1024, "m": 1, "g": 1024,
                               "t": 1024**2}[m.group(2)]
    return f"{max(1, round(mib))}Mi"


def _seconds(value: Any) -> int:
    if isinstance(value, int | float):
        return int(value)
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)", str(value)):
        total += float(number) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]
    return max(1, round(total))


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        import shlex

        return shlex.split(value)
    return [str(v) for v in value]


def _env(value: Any) -> list[EnvVar]:
    if isinstance(value, dict):
        return [EnvVar(name=str(k), value="" if v is None else str(v)) for k, v in value.items()]
    out = []
    for item in value or []:
        key, _, val = str(item).partition("=")
        out.append(EnvVar(name=key, value=val))
    return out


def _resources(svc: dict[str, Any]) -> Resources | None:
    limits: dict[str, str] = {}
    deploy_limits = ((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {}
    cpus = svc.get("cpus", deploy_limits.get("cpus"))
    memory = svc.get("mem_limit", deploy_limits.get("memory"))
    if cpus is not None:
        limits["cpu"] = _cpu_quantity(cpus)
    if memory is not None:
        limits["memory"] = _memory_quantity(memory)
    # Equal requests and limits: Guaranteed QoS, so a busy node never squeezes a sandbox
    # below what the task declared.
    return Resources(limits=limits, requests=dict(limits)) if limits else None


def _security_context(user: Any, where: str) -> SecurityContext:
    uid, _, gid = str(user).partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        raise RsrError(f"{where}: user {user!r}: a Kubernetes pod needs a numeric uid[:gid]")
    return SecurityContext(run_as_user=int(uid), run_as_group=int(gid) if gid else None)


def _probe(check: dict[str, Any], where: str) -> ReadinessProbe | None:
    test = check.get("test")
    if check.get("disable") or not test or test == ["NONE"]:
        return None
    if isinstance(test, str):
        command = ["sh", "-c", test]
    elif test[0] == "CMD":
        command = [str(t) for t in test[1:]]
    elif test[0] == "CMD-SHELL":
        command = ["sh", "-c", str(test[1])]
    else:
        raise RsrError(f"{where}: healthcheck.test {test!r}: expected CMD or CMD-SHELL")
    return ReadinessProbe(
        exec=ExecProbe(command=command),
        initial_delay_seconds=_seconds(check["start_period"]) if "start_period" in check else None,
        period_seconds=_seconds(check["interval"]) if "interval" in check else None,
        timeout_seconds=_seconds(check["timeout"]) if "timeout" in check else None,
        failure_threshold=int(check["retries"]) + 1 if "retries" in check else None)


def _without_log_mounts(task: LoadedTask, svc: dict[str, Any]) -> dict[str, Any]:
    """Drop the per-sample log volumes rsr gives Terminal-Bench 1 compose files: under Docker they
    only keep /logs per sample, and a pod's filesystem already is, so a pod loses nothing. Any
    other volume stays and is refused below."""
    if not svc.get("volumes"):
        return svc
    log_volumes = set(LOG_VOLUMES.values())

    def source(entry: Any) -> str | None:
        if isinstance(entry, str):
            return entry.split(":", 1)[0]
        if isinstance(entry, dict):
            return entry.get("source")
        return None

    kept = [v for v in svc["volumes"] if source(v) not in log_volumes]
    out = {k: v for k, v in svc.items() if k != "volumes"}
    if kept:
        out["volumes"] = kept
    return out


def _service(task: LoadedTask, name: str, svc: dict[str, Any], image: str) -> Service:
    where = f"task {task.name}, service {name!r}"
    svc = _without_log_mounts(task, svc)
    unknown = sorted(set(svc) - _DROPPED_KEYS - _MAPPED_KEYS)
    if unknown:
        raise RsrError(f"{where}: compose keys {', '.join(unknown)} have no Kubernetes mapping in "
                       "rsr; run this task with the docker sandbox")
    out = Service(
        image=image,
        # Compose `entrypoint` is the container's command, compose `command` its arguments.
        command=_as_list(svc.get("entrypoint")),
        args=_as_list(svc.get("command")) or [],
        working_dir=svc.get("working_dir"),
        env=_env(svc.get("environment")),
        resources=_resources(svc),
        readiness_probe=_probe(svc["healthcheck"], where) if svc.get("healthcheck") else None,
    )
    if name == MAIN_SERVICE:
        env = task.config.environment
        res = out.resources or Resources()
        res.limits["ephemeral-storage"] = f"{int(env.storage_mb)}Mi"
        if env.gpus:
            res.limits["nvidia.com/gpu"] = str(int(env.gpus))
        res.requests = dict(res.limits)
        out.resources = res
        out.security_context = SecurityContext(run_as_user=0, run_as_group=0)
    elif svc.get("user") is not None:
        out.security_context = _security_context(svc["user"], where)
    return out


def _k8s_name(name: str) -> str:
    """A compose service name as a Kubernetes object name (lower case, digits, '-')."""
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "service"


def helm_values(task: LoadedTask, images: ImageMap, force_build: bool = False) -> HelmValues:
    """The Helm values for one task; refuses a task whose images are not in the map.
    `force_build`: the main image is the one built from the task's Dockerfile (as under Docker)."""
    doc = compose_spec(task, force_build=force_build)
    refs: dict[str, str] = {}
    for image in task_images(task, force_build):
        record = images.lookup(image.local)
        if record is None:
            raise missing_image_error(task, image, images)
        refs[image.service] = record.reference
    specs = {name: _service(task, name, svc, refs[name]) for name, svc in doc["services"].items()}
    main = specs.pop(MAIN_SERVICE)
    if not task.config.environment.allow_internet:
        main.network_isolated = True
        sidecars = []
        for name, spec in specs.items():
            fields = spec.model_dump(include=set(Container.model_fields) - {"name"})
            sidecars.append(Container(name=_k8s_name(name), **fields))
        names = [c.name for c in sidecars]
        if len(set(names)) < len(names) or {"coredns", MAIN_SERVICE} & set(names):
            raise RsrError(f"task {task.name}: sidecar names {names} clash as Kubernetes container names")
        return HelmValues(services={MAIN_SERVICE: main}, extra_containers=sidecars)
    services: dict[str, Service] = {MAIN_SERVICE: main}
    for name, spec in specs.items():
        k8s_name = _k8s_name(name)
        if k8s_name != name:  # keep the compose name resolvable inside the sandbox
            spec.additional_dns_records.append(name)
        if k8s_name in services:
            raise RsrError(f"task {task.name}: services {name!r} and another both become "
                           f"{k8s_name!r} under Kubernetes' naming rules")
        services[k8s_name] = spec
    for spec in services.values():
        spec.dns_record = True  # services find each other by name, as on a compose network
    return HelmValues(services=services, allow_entities=["world"])


def default_user(task: LoadedTask, images: ImageMap, force_build: bool = False) -> str | None:
    """Who runs a command that names no user: the compose file's `user`, else the image's
    USER (recorded at push), as under Docker; None for root."""
    main = next(i for i in task_images(task, force_build) if i.service == MAIN_SERVICE)
    record = images.lookup(main.local)
    user = str(compose_spec(task, force_build=force_build)["services"][MAIN_SERVICE].get("user")
               or (record.user if record else ""))
    return user if user and user not in ("0", "root", "0:0", "root:root") else None


def k8s_cache_dir() -> Path:
    path = cache_base() / "k8s"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_values_file(task: LoadedTask, images: ImageMap, force_build: bool = False) -> Path:
    """Write the task's values (validated against the chart schema) into the cache; the file
    name carries a hash of its content, like the compose files."""
    values = helm_values(task, images, force_build).to_values()
    validate_values(values, f"task {task.name}")
    text = yaml.safe_dump(values, sort_keys=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    slug = re.sub(r"[^a-z0-9_.-]+", "-", task.name.lower())
    path = k8s_cache_dir() / f"{slug}-{digest}" / "values.yaml"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return path


def k8s_sandbox_spec(task: LoadedTask, images: ImageMap, force_build: bool = False) -> Any:
    """`SandboxEnvironmentSpec("k8s", K8sSandboxEnvironmentConfig(values=...))` for one task."""
    _require_k8s_extra()
    from inspect_ai.util import SandboxEnvironmentSpec
    from k8s_sandbox import K8sSandboxEnvironmentConfig

    config = K8sSandboxEnvironmentConfig(values=write_values_file(task, images, force_build),
                                         default_user=default_user(task, images, force_build))
    return SandboxEnvironmentSpec("k8s", config)


__all__ = ["HelmValues", "Service", "chart_dir", "chart_schema", "helm_merge",
           "helm_values", "k8s_sandbox_spec", "validate_values", "write_values_file"]
