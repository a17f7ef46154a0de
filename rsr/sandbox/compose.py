"""Task environment -> Docker Compose file for Inspect's docker sandbox.

Used for tasks that bring their own `environment/docker-compose.yaml` (multi-container tasks,
TB1 compose tasks) and, as a fallback, for Dockerfile-only tasks. The document is built the way
Harbor 0.26 builds its own: a base `main` service (built from the environment directory, or the
task's prebuilt image, kept alive by a sleep), the task's file merged over it, then the run's
policy (limits, GPUs, network, per-sample log volumes) applied on top.

Rules that differ from a plain `docker compose up` of the task's file, each for a reason:
- Variables are rsr's, never the host's: Harbor's (`CONTEXT_DIR`, `MAIN_IMAGE_NAME`, `CPUS`,
  `MEMORY`, the log paths ...) and TB1's (`T_BENCH_*`) get values that make sense here; any
  other `${VAR}` takes its `:-default` or stays empty (so `${HOME}` never mounts the host's home).
- The log paths Harbor and TB1 bind to host directories become compose *project* volumes: every
  sample run is its own compose project, so each gets its own `/logs` (shared by that sample's
  services, deleted with it) and concurrent verifiers never see each other's rewards. No other
  host path may enter a sandbox; a task file binding one is an error naming the field.
- The main service is renamed `default` (Inspect's convention), and every reference to it
  (`depends_on`, `network_mode: service:`, `volumes_from`) follows the rename.
- Without internet (the task's policy, `-T network=none`, or an engine without a bridge network,
  as on the project's machines) the main service has `network_mode: none` and the others join its
  namespace; every service name then resolves to 127.0.0.1, so `redis:6379` still reaches the
  sidecar. Host networking is never used: it would expose the host's loopback services.
- Builds use `build.network: host` (the package mirror is reachable only from the host network)
  and a stable image tag per build context, so an image is built once per task version.
We write compose *files* (not `ComposeConfig` objects) because Inspect's typed model does not
carry `build.network`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from rsr.errors import TaskFormatError
from rsr.sandbox.cache import cache_dir
from rsr.tasks.load import AGENT_LOG_DIR, TESTS_MOUNT, VERIFIER_LOG_DIR, LoadedTask, directory_digest
from rsr.tasks.models import expand_env

MAIN_SERVICE = "default"
HARBOR_MAIN = "main"
IMAGE_PREFIX = "rsr-task"
ARTIFACTS_DIR = "/logs/artifacts"
LOGS_DIR = "/logs"
# PID 1 installs no signal handlers, so the kernel drops every signal sent to it from inside the
# container: a `kill 1` by the agent or a task's tests cannot take the sandbox down. It dies only
# from outside, where `stop_signal: SIGKILL` makes `docker stop` immediate.
KEEPALIVE = ["sleep", "infinity"]
STOP = {"stop_signal": "SIGKILL", "stop_grace_period": "1s"}

# Compose project volumes standing in for the host log directories of Harbor and TB1.
LOG_VOLUMES = {
    "logs": "rsr-logs",
    "agent": "rsr-agent-logs",
    "verifier": "rsr-verifier-logs",
    "artifacts": "rsr-artifacts",
}


def compose_cache_dir() -> Path:
    return cache_dir("compose")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.") or "task"


def image_tag(task: LoadedTask, service: str = MAIN_SERVICE) -> str:
    """A stable tag: changes only when the build context changes."""
    digest = directory_digest(task.build_context()).removeprefix("sha256:")[:16]
    suffix = "" if service == MAIN_SERVICE else f"-{_slug(service)}"
    return f"{IMAGE_PREFIX}/{_slug(task.name)}{suffix}:{digest}"


def prebuilt_image(task: LoadedTask, policy: str = "auto") -> str | None:
    """The task's prebuilt `docker_image` as the run uses it: None under `-T images=force-build`
    (Harbor's --force-build: every image is built from the task's Dockerfile)."""
    return None if policy == "force-build" else task.config.environment.docker_image


@functools.lru_cache(maxsize=1)
def engine_has_bridge() -> bool:
    """Whether the Docker engine offers its default bridge network (this project's engines run
    with `--bridge=none`, so an internet-enabled sandbox cannot get a network there)."""
    try:
        done = subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def sandbox_network(allow_internet: bool, bridge: bool | None = None) -> str:
    """'bridge' when the sample gets a network, else 'none' (what the log records)."""
    if not allow_internet:
        return "none"
    return "bridge" if (engine_has_bridge() if bridge is None else bridge) else "none"


# ---- variables ------------------------------------------------------------------------------

def compose_variables(task: LoadedTask, force_build: bool = False) -> dict[str, str]:
    """The values of the variables a task's compose file may use, under rsr."""
    env = task.config.environment
    tag = image_tag(task)
    prebuilt = None if force_build else env.docker_image
    values = {
        # Harbor 0.26
        "CONTEXT_DIR": str(task.build_context()),
        "MAIN_IMAGE_NAME": tag,
        "PREBUILT_IMAGE_NAME": prebuilt or tag,
        "CPUS": f"{env.cpus:g}",
        "MEMORY": f"{env.memory_mb}M",
        "HOST_VERIFIER_LOGS_PATH": LOG_VOLUMES["verifier"],
        "ENV_VERIFIER_LOGS_PATH": VERIFIER_LOG_DIR,
        "HOST_AGENT_LOGS_PATH": LOG_VOLUMES["agent"],
        "ENV_AGENT_LOGS_PATH": AGENT_LOG_DIR,
        "HOST_ARTIFACTS_PATH": LOG_VOLUMES["artifacts"],
        "ENV_ARTIFACTS_PATH": ARTIFACTS_DIR,
        "TEST_DIR": TESTS_MOUNT,
        # Terminal-Bench 1
        "T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME": tag,
        "T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME": "client",
        "T_BENCH_TASK_DOCKER_NAME_PREFIX": _slug(task.name),
        "T_BENCH_TEST_DIR": TESTS_MOUNT,
        "T_BENCH_CONTAINER_LOGS_PATH": LOGS_DIR,
        "T_BENCH_CONTAINER_AGENT_LOGS_PATH": AGENT_LOG_DIR,
        "T_BENCH_TASK_LOGS_PATH": LOG_VOLUMES["logs"],
        "T_BENCH_TASK_AGENT_LOGS_PATH": LOG_VOLUMES["agent"],
    }
    # As in Harbor the task's own [environment].env may be referenced; its ${X:-default}s take
    # their defaults, never the host's values.
    task_env = {k: expand_env(v, {}) for k, v in env.env.items()}
    return {**task_env, **values}


_VAR = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}"
                  r"|([A-Za-z_][A-Za-z0-9_]*))")


def interpolate(text: str, variables: dict[str, str], unknown: set[str]) -> str:
    """Compose-style `${VAR}`, `${VAR:-default}`, `$VAR` interpolation against `variables` only.

    The result is fed to `docker compose` again, so literal dollars come out escaped (`$$`).
    """
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$$"
        name = m.group(1) or m.group(4)
        op, arg = m.group(2), m.group(3) or ""
        value = variables.get(name)
        if value is None:
            unknown.add(name)
        is_set = value is not None and (value != "" or not (op or "").startswith(":"))
        if op in (":-", "-"):
            out = value if is_set else interpolate(arg, variables, unknown).replace("$$", "$")
        elif op in (":+", "+"):
            out = interpolate(arg, variables, unknown).replace("$$", "$") if is_set else ""
        else:  # plain or ${VAR:?err}: empty when undefined
            out = value or ""
        return out.replace("$", "$$")

    return _VAR.sub(sub, text)


def _interpolate_tree(node: Any, variables: dict[str, str], unknown: set[str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, variables, unknown)
    if isinstance(node, list):
        return [_interpolate_tree(v, variables, unknown) for v in node]
    if isinstance(node, dict):
        return {k: _interpolate_tree(v, variables, unknown) for k, v in node.items()}
    return node


# ---- the document ---------------------------------------------------------------------------

def _resources(task: LoadedTask) -> dict[str, Any]:
    env = task.config.environment
    # Limits come from task.toml; storage_mb is advisory (overlay2 cannot cap it without xfs quotas).
    return {"cpus": float(env.cpus), "mem_limit": f"{int(env.memory_mb)}m", "pids_limit": 4096}


def _environment(task: LoadedTask) -> dict[str, str]:
    return {k: expand_env(v) for k, v in task.config.environment.env.items()}


def _env_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return dict(value)
    out: dict[str, Any] = {}
    for item in value or []:
        key, sep, val = str(item).partition("=")
        out[key] = val if sep else None
    return out


def _gpu_request(count: int) -> dict[str, Any]:
    return {"driver": "nvidia", "count": count, "capabilities": ["gpu"]}


def _has_gpu_request(svc: dict[str, Any]) -> bool:
    devices = (((svc.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    return bool(svc.get("gpus")) or any("gpu" in (d.get("capabilities") or []) for d in devices if isinstance(d, dict))


def _base_main(task: LoadedTask, force_build: bool) -> dict[str, Any]:
    prebuilt = prebuilt_image(task, "force-build" if force_build else "auto")
    svc: dict[str, Any] = {"command": KEEPALIVE}
    if prebuilt:
        svc["image"] = prebuilt
    else:
        svc["image"] = image_tag(task)
        svc["build"] = {"context": str(task.build_context())}
    return svc


def _merge(base: Any, over: Any) -> Any:
    """Compose's override merge, as far as task files need it: mappings merge key by key,
    `environment` merges by variable, lists of volumes/ports accumulate, scalars are replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            if key == "environment" and key in out:
                out[key] = {**_env_dict(out[key]), **_env_dict(value)}
            elif key in ("volumes", "ports", "expose", "extra_hosts") and isinstance(out.get(key), list) \
                    and isinstance(value, list):
                out[key] = out[key] + [v for v in value if v not in out[key]]
            elif key == "command" or key == "entrypoint":
                out[key] = value
            else:
                out[key] = _merge(out.get(key), value) if key in out else value
        return out
    return over


def compose_spec(task: LoadedTask, *, allow_internet: bool | None = None, bridge: bool | None = None,
                 unknown: set[str] | None = None, force_build: bool = False) -> dict[str, Any]:
    """The compose document for one task (a dict ready for YAML).

    `allow_internet` is the run's effective policy (default: the task's); `bridge` whether the
    engine can give a sandbox a network (default: ask the engine when it matters);
    `force_build`: build the main image from the task's Dockerfile even if it names a prebuilt one.
    """
    internet = task.config.environment.allow_internet if allow_internet is None else allow_internet
    networked = sandbox_network(internet, bridge) == "bridge"
    unknown = set() if unknown is None else unknown
    user_file = task.user_compose_file()
    if user_file is None:
        return _single_service(task, networked, force_build)
    return _from_user_compose(task, user_file, networked, unknown, force_build)


def _single_service(task: LoadedTask, networked: bool, force_build: bool) -> dict[str, Any]:
    env = task.config.environment
    service: dict[str, Any] = {"command": KEEPALIVE, **STOP, "x-default": True, **_resources(task)}
    prebuilt = prebuilt_image(task, "force-build" if force_build else "auto")
    if prebuilt:
        service["image"] = prebuilt
    else:
        dockerfile = task.build_context() / "Dockerfile"
        if not dockerfile.is_file():
            raise TaskFormatError(dockerfile, None, "missing Dockerfile" + (
                " (-T images=force-build builds from it, not from docker_image)" if env.docker_image else ""))
        service["image"] = image_tag(task)
        service["build"] = {"context": str(task.build_context()), "dockerfile": "Dockerfile", "network": "host"}
        service["x-local"] = True
    if env.workdir:
        service["working_dir"] = env.workdir
    if env.env:
        service["environment"] = _environment(task)
    if env.gpus:
        service["deploy"] = {"resources": {"reservations": {"devices": [_gpu_request(env.gpus)]}}}
    if not networked:
        service["network_mode"] = "none"
    return {"services": {MAIN_SERVICE: service}}


def _read_user_compose(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise TaskFormatError(path, None, f"invalid YAML: {e}") from e
    except UnicodeDecodeError as e:
        raise TaskFormatError(path, None, f"not UTF-8 text: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict) or not doc["services"]:
        raise TaskFormatError(path, "services", "expected a mapping of services")
    for name, svc in doc["services"].items():
        if not isinstance(svc, dict):
            raise TaskFormatError(path, f"services.{name}", "expected a mapping")
    return doc


def _main_name(task: LoadedTask, services: dict[str, Any]) -> str:
    if task.format == "terminal-bench-1":
        # TB1 (and Harbor's migration of it) took `client`, else the first service.
        return "client" if "client" in services else next(iter(services))
    return HARBOR_MAIN


def _from_user_compose(task: LoadedTask, path: Path, networked: bool, unknown: set[str],
                       force_build: bool) -> dict[str, Any]:
    doc = _read_user_compose(path)
    variables = compose_variables(task, force_build)
    doc = _interpolate_tree(doc, variables, unknown)
    services: dict[str, Any] = doc["services"]
    main = _main_name(task, services)
    # Harbor layers the task's file over its own main service: a file that only adds sidecars
    # still gets a main container built from environment/Dockerfile.
    if task.format == "harbor" or main not in services:
        services = {main: _merge(_base_main(task, force_build), services.get(main, {})),
                    **{k: v for k, v in services.items() if k != main}}
    names = {n: (MAIN_SERVICE if n == main else n) for n in services}
    out: dict[str, Any] = {}
    declared = dict(doc.get("volumes") or {})
    for name, svc in services.items():
        out[names[name]] = _adapt_service(task, path, name, names, dict(svc), declared)
    main_svc = out[MAIN_SERVICE]
    _apply_main_policy(task, main_svc)
    if networked:
        if "networks" not in main_svc and "network_mode" not in main_svc:
            # Sidecars written for Harbor reach the main container by its original name.
            main_svc["networks"] = {"default": {"aliases": sorted({HARBOR_MAIN, main})}}
    else:
        _isolate(out, sorted({*names, HARBOR_MAIN}))
        doc.pop("networks", None)
    doc["services"] = out
    if declared:
        doc["volumes"] = declared
    return doc


def _adapt_service(task: LoadedTask, path: Path, name: str, names: dict[str, str], svc: dict[str, Any],
                   declared: dict[str, Any]) -> dict[str, Any]:
    new_name = names[name]
    field = f"services.{name}"
    svc.pop("container_name", None)
    build = svc.get("build")
    if build is not None:
        build = {"context": build} if isinstance(build, str) else dict(build)
        context = Path(str(build.get("context") or "."))
        if not context.is_absolute():
            context = (path.parent / context).resolve()
        build["context"] = str(context)
        build["network"] = "host"
        svc["build"] = build
        if not svc.get("image"):
            svc["image"] = image_tag(task, new_name)
        svc["x-local"] = True
    if str(svc.get("image") or "").startswith(f"{IMAGE_PREFIX}/"):
        # An image another service of this task builds (e.g. `${MAIN_IMAGE_NAME}`): never pulled.
        svc["x-local"] = True
    svc["volumes"] = [_volume(v, path, f"{field}.volumes[{i}]", declared)
                      for i, v in enumerate(svc.get("volumes") or [])]
    if not svc["volumes"]:
        svc.pop("volumes")
    if svc.get("volumes_from"):
        raise TaskFormatError(path, f"{field}.volumes_from", "volumes_from is not supported (share a named volume)")
    if isinstance(svc.get("privileged"), bool) and svc["privileged"]:
        raise TaskFormatError(path, f"{field}.privileged", "privileged containers are not allowed")
    deps = svc.get("depends_on")
    if isinstance(deps, list):
        svc["depends_on"] = [names.get(d, d) for d in deps]
    elif isinstance(deps, dict):
        svc["depends_on"] = {names.get(d, d): v for d, v in deps.items()}
    mode = svc.get("network_mode")
    if isinstance(mode, str) and mode.startswith("service:"):
        svc["network_mode"] = f"service:{names.get(mode[8:], mode[8:])}"
    if isinstance(svc.get("links"), list):
        svc["links"] = [names.get(str(link).split(":")[0], str(link).split(":")[0]) for link in svc["links"]]
    return svc


def _volume(entry: Any, path: Path, field: str, declared: dict[str, Any]) -> Any:
    """A volume entry, refused if it would put a host path into the sandbox."""
    if isinstance(entry, dict):
        kind, source = entry.get("type", "volume"), entry.get("source")
    else:
        parts = str(entry).split(":")
        source = parts[0] if len(parts) > 1 else None
        kind = "volume"
        if source is not None and (source.startswith(("/", ".", "~")) or source == ""):
            kind = "bind"
    if kind == "bind" or (kind == "volume" and isinstance(source, str) and source.startswith(("/", ".", "~"))):
        raise TaskFormatError(path, field, f"host path {source or '(empty)'!r} mounted into the sandbox; rsr mounts "
                                           "only per-sample volumes it creates (use a named volume)")
    if kind == "volume" and source:
        declared.setdefault(source, {})
    elif kind not in ("volume", "tmpfs"):
        raise TaskFormatError(path, field, f"mount type {kind!r} is not supported")
    return entry


def _apply_main_policy(task: LoadedTask, svc: dict[str, Any]) -> None:
    env = task.config.environment
    svc["x-default"] = True
    svc.setdefault("command", KEEPALIVE)
    if svc.get("command") == KEEPALIVE or svc.get("command") == ["sh", "-c", "sleep infinity"]:
        svc["command"] = KEEPALIVE
        svc.update(STOP)
    limits = ((svc.get("deploy") or {}).get("resources") or {}).get("limits")
    if isinstance(limits, dict):
        # Compose refuses top-level limits next to deploy.resources.limits: fill those instead.
        res = _resources(task)
        limits.setdefault("cpus", str(res["cpus"]))
        limits.setdefault("memory", res["mem_limit"])
        limits.setdefault("pids", res["pids_limit"])
    else:
        for key, value in _resources(task).items():
            svc.setdefault(key, value)
    if env.workdir:
        svc["working_dir"] = env.workdir
    if env.env:
        svc["environment"] = {**_env_dict(svc.get("environment")), **_environment(task)}
    if env.gpus and not _has_gpu_request(svc):
        deploy = svc.setdefault("deploy", {})
        reservations = deploy.setdefault("resources", {}).setdefault("reservations", {})
        reservations.setdefault("devices", []).append(_gpu_request(env.gpus))


def _isolate(services: dict[str, Any], aliases: list[str]) -> None:
    """No network: main gets none, the others join its namespace (so they talk over loopback)."""
    for name, svc in services.items():
        for key in ("networks", "ports", "links", "extra_hosts", "dns"):
            svc.pop(key, None)
        if name == MAIN_SERVICE:
            svc["network_mode"] = "none"
            # The other services now start after main (they join its namespace), so main can
            # no longer wait for them.
            svc.pop("depends_on", None)
            # Every service name resolves to loopback inside the shared namespace.
            svc["extra_hosts"] = [f"{n}:127.0.0.1" for n in sorted({*aliases, *services})]
        else:
            svc["network_mode"] = f"service:{MAIN_SERVICE}"
            deps = svc.get("depends_on") or []
            if isinstance(deps, dict):
                deps = {**deps, MAIN_SERVICE: {"condition": "service_started"}}
                deps.pop(name, None)
                svc["depends_on"] = deps
            else:
                svc["depends_on"] = sorted({*deps, MAIN_SERVICE} - {name})


def compose_differences(task: LoadedTask) -> list[str]:
    """What the compose adaptation changes relative to Harbor (for `rsr tasks lint`)."""
    if task.user_compose_file() is None:
        return []
    unknown: set[str] = set()
    try:
        compose_spec(task, allow_internet=False, bridge=False, unknown=unknown)
    except TaskFormatError as e:
        return [f"compose file cannot run under rsr: {e}"]
    return [f"compose file uses ${{{name}}}: Harbor takes it from the host environment, rsr leaves it empty "
            "(or its default)" for name in sorted(unknown)]


def without_pulls_or_builds(doc: dict[str, Any]) -> dict[str, Any]:
    """`-T images=never` on the compose path: no service is built (Inspect builds only services
    with `build`) or pulled (it skips `x-local` ones; `pull_policy: never` stops `compose up`)."""
    for svc in doc["services"].values():
        svc.pop("build", None)
        svc["x-local"] = True
        svc["pull_policy"] = "never"
    return doc


def write_compose_file(task: LoadedTask, *, allow_internet: bool | None = None, bridge: bool | None = None,
                       force_build: bool = False, never: bool = False) -> str:
    """Write the task's compose file into the cache and return its path (`force_build`,
    `never`: the run's image policy, rsr.sandbox.pull).

    The file name carries a hash of its content, so concurrent evals of different task
    versions never overwrite each other's files.
    """
    doc = compose_spec(task, allow_internet=allow_internet, bridge=bridge, force_build=force_build)
    text = yaml.safe_dump(without_pulls_or_builds(doc) if never else doc, sort_keys=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = compose_cache_dir() / f"{_slug(task.name)}-{digest}" / "compose.yaml"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return str(path)
