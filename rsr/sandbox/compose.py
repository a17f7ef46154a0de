"""Task environment -> Docker Compose file for Inspect's docker sandbox.

We write compose *files* (not `ComposeConfig` objects) because builds need
`build.network: host` here (the package mirror is reachable only from the host network),
which Inspect's typed model does not carry. Each task gets a stable image tag derived from
its environment's content, so an image is built once per task version, not once per sample.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import yaml

from rsr.errors import TaskFormatError
from rsr.tasks.load import LoadedTask, directory_digest
from rsr.tasks.models import expand_env

MAIN_SERVICE = "default"
IMAGE_PREFIX = "rsr-task"
# PID 1 installs no signal handlers, so the kernel drops every signal sent to it from inside the
# container: a `kill 1` by the agent or a task's tests cannot take the sandbox down. It dies only
# from outside, where `stop_signal: SIGKILL` makes `docker stop` immediate.
KEEPALIVE = ["sleep", "infinity"]
STOP = {"stop_signal": "SIGKILL", "stop_grace_period": "1s"}


def compose_cache_dir() -> Path:
    base = os.environ.get("RSR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "rsr")
    path = Path(base) / "compose"
    path.mkdir(parents=True, exist_ok=True)
    return path


def image_tag(task: LoadedTask, service: str = MAIN_SERVICE) -> str:
    """A stable tag: changes only when the build context changes."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", task.name.lower()).strip("-.") or "task"
    digest = directory_digest(task.build_context()).removeprefix("sha256:")[:16]
    suffix = "" if service == MAIN_SERVICE else f"-{re.sub(r'[^a-z0-9_.-]+', '-', service.lower())}"
    return f"{IMAGE_PREFIX}/{slug}{suffix}:{digest}"


def _resources(task: LoadedTask) -> dict[str, Any]:
    env = task.config.environment
    # Limits come from task.toml; storage_mb is advisory (overlay2 cannot cap it without xfs quotas).
    return {"cpus": float(env.cpus), "mem_limit": f"{int(env.memory_mb)}m", "pids_limit": 4096}


def _environment(task: LoadedTask) -> dict[str, str]:
    return {k: expand_env(v) for k, v in task.config.environment.env.items()}


def compose_spec(task: LoadedTask) -> dict[str, Any]:
    """The compose document for one task (a dict ready for YAML)."""
    env = task.config.environment
    if task.user_compose_file() is not None and not env.docker_image:
        return _from_user_compose(task)

    service: dict[str, Any] = {
        "command": KEEPALIVE,
        **STOP,
        "x-default": True,
        **_resources(task),
    }
    if env.docker_image:
        service["image"] = env.docker_image
    else:
        service["image"] = image_tag(task)
        dockerfile = task.build_context() / "Dockerfile"
        if not dockerfile.is_file():
            raise TaskFormatError(dockerfile, None, "missing Dockerfile")
        service["build"] = {"context": str(task.build_context()), "dockerfile": "Dockerfile",
                            "network": "host"}
        service["x-local"] = True
    if env.workdir:
        service["working_dir"] = env.workdir
    if env.env:
        service["environment"] = _environment(task)
    if not env.allow_internet:
        service["network_mode"] = "none"
    return {"services": {MAIN_SERVICE: service}}


# TB1 compose files reference these variables; give them values that make sense under Inspect.
def _tb1_variables(task: LoadedTask) -> dict[str, str]:
    return {
        "T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME": image_tag(task),
        "T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME": "client",
        "T_BENCH_TASK_DOCKER_NAME_PREFIX": re.sub(r"[^a-z0-9_.-]+", "-", task.name.lower()),
        "T_BENCH_TEST_DIR": "/tests",
        "T_BENCH_CONTAINER_LOGS_PATH": "/logs",
        "T_BENCH_CONTAINER_AGENT_LOGS_PATH": "/logs/agent",
        "T_BENCH_TASK_LOGS_PATH": "/tmp/rsr-logs",
        "T_BENCH_TASK_AGENT_LOGS_PATH": "/tmp/rsr-logs/agent",
    }


def _from_user_compose(task: LoadedTask) -> dict[str, Any]:
    """Adapt a task's own (possibly multi-container) compose file.

    - the main service (`main`, `client`, `default`, or the only/first one) becomes `default`;
    - `container_name` is dropped (Inspect runs several samples of a task at once);
    - every built service gets a stable image tag and `build.network: host`;
    - without internet, the main service has `network_mode: none` and the others join its
      network namespace, so they reach each other on localhost without a bridge network.
    """
    path = task.user_compose_file()
    assert path is not None
    raw_text = path.read_text(encoding="utf-8")
    variables = _tb1_variables(task)
    text = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}",
                  lambda m: variables.get(m.group(1), m.group(0)), raw_text)
    text = expand_env(text)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise TaskFormatError(path, None, f"invalid YAML: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict) or not doc["services"]:
        raise TaskFormatError(path, "services", "expected a mapping of services")
    services: dict[str, Any] = doc["services"]
    main = next((n for n in ("main", "client", MAIN_SERVICE) if n in services), next(iter(services)))
    renamed: dict[str, Any] = {}
    for name, svc in services.items():
        if not isinstance(svc, dict):
            raise TaskFormatError(path, f"services.{name}", "expected a mapping")
        svc = dict(svc)
        svc.pop("container_name", None)
        new_name = MAIN_SERVICE if name == main else name
        build = svc.get("build")
        if build is not None:
            build = {"context": build} if isinstance(build, str) else dict(build)
            context = Path(build.get("context", "."))
            if not context.is_absolute():
                context = (path.parent / context).resolve()
            build["context"] = str(context)
            build["network"] = "host"
            svc["build"] = build
            if not svc.get("image") or "T_BENCH" in raw_text and name == main:
                svc["image"] = image_tag(task, new_name)
            svc["x-local"] = True
        if new_name == MAIN_SERVICE:
            svc.setdefault("command", KEEPALIVE)
            if svc["command"] == KEEPALIVE:
                svc.update(STOP)
            svc["x-default"] = True
            for key, value in _resources(task).items():
                svc.setdefault(key, value)
            if task.config.environment.workdir:
                svc["working_dir"] = task.config.environment.workdir
        renamed[new_name] = svc
    if not task.config.environment.allow_internet:
        for name, svc in renamed.items():
            for key in ("networks", "ports", "links"):
                svc.pop(key, None)
            svc["network_mode"] = "none" if name == MAIN_SERVICE else f"service:{MAIN_SERVICE}"
            if name != MAIN_SERVICE:
                deps = svc.get("depends_on") or []
                if isinstance(deps, dict):
                    deps = list(deps)
                svc["depends_on"] = sorted({*deps, MAIN_SERVICE} - {name})
        if isinstance(renamed[MAIN_SERVICE].get("depends_on"), list | dict):
            # The main service can no longer wait for services that now wait for it.
            renamed[MAIN_SERVICE].pop("depends_on")
        doc.pop("networks", None)
    doc["services"] = renamed
    return doc


def write_compose_file(task: LoadedTask) -> str:
    """Write the task's compose file into the cache and return its path.

    The file name carries a hash of its content, so concurrent evals of different task
    versions never overwrite each other's files.
    """
    text = yaml.safe_dump(compose_spec(task), sort_keys=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    slug = re.sub(r"[^a-z0-9_.-]+", "-", task.name.lower())
    path = compose_cache_dir() / f"{slug}-{digest}" / "compose.yaml"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return str(path)

