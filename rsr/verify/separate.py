"""A separate verification environment (`[verifier] environment_mode = "separate"`), as Harbor runs it.

The tests run in a container of their own, made from the verifier's environment (its
`docker_image`, a Dockerfile in `tests/` whose image holds the tests, or else the task's own
image, fresh), never from the agent's filesystem. All that crosses over from the agent is its
artifacts: the agent container's `/logs/artifacts` and the task's declared `artifacts`, copied
to `/logs/artifacts` through the engine. `/tests` (unless the image holds its own) and
`/logs/verifier` are per-sample host directories, as in a snapshot.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from docker.errors import APIError, NotFound

from rsr.sandbox import engine
from rsr.sandbox.compose import image_tag, sandbox_network
from rsr.sandbox.docker_api import RsrDockerConfig, ensure_image, host_config
from rsr.tasks.load import TESTS_MOUNT, VERIFIER_LOG_DIR, LoadedTask, directory_digest
from rsr.verify.snapshot import KEEPALIVE, Snapshot, host_dirs, stage_tests

ARTIFACTS_DIR = "/logs/artifacts"


def verifier_image(task: LoadedTask, agent_image: str) -> tuple[RsrDockerConfig, bool]:
    """(the verification container's config, whether its image holds the tests itself)."""
    cfg = task.config
    env = cfg.verifier.environment or cfg.environment
    tests_dir = task.paths.tests_dir
    bundled = False
    build_context = None
    # A step's own verifier image comes first (Harbor's candidates: the step's, then the task's).
    step_env = cfg.steps[task.step].verifier.environment if task.step is not None else None
    step_tests = task.paths.step_tests_dir(task.step_name) if task.step_name else None
    if step_env is not None and step_env.docker_image:
        env = step_env
    elif step_tests is not None and (step_tests / "Dockerfile").is_file():
        tests_dir = step_tests
    if env.docker_image and env is not cfg.environment:
        image, bundled = env.docker_image, cfg.verifier.environment is not None
    elif env.docker_image:
        # The task's own image: the one its agent ran (pulled, or built under -T images=force-build).
        image = agent_image
    elif (tests_dir / "Dockerfile").is_file():
        slug = re.sub(r"[^a-z0-9_.-]+", "-", task.name.lower()).strip("-.") or "task"
        image = f"rsr-task/{slug}-verifier:{directory_digest(tests_dir).removeprefix('sha256:')[:16]}"
        build_context, bundled = str(tests_dir), True
    else:
        image = agent_image if cfg.verifier.environment is None else image_tag(task)
        if image != agent_image:
            build_context = str(task.build_context())
    config = RsrDockerConfig(task=f"{task.name} (verifier)", image=image, build_context=build_context,
                             build_timeout_sec=env.build_timeout_sec, cpus=float(env.cpus),
                             memory_mb=int(env.memory_mb), network=sandbox_network(env.allow_internet),  # type: ignore[arg-type]
                             workdir=env.workdir, gpus=int(env.gpus or 0))
    return config, bundled


def _copy_artifacts(agent: str, target: str, task: LoadedTask) -> None:
    """The agent's artifacts into the verification container, each at its own source path (Harbor:
    "no translation"; the publish dir is /logs/artifacts on both sides), directories emptied first
    as Harbor empties them, `exclude` applied, links and special files dropped."""
    from rsr.verify.artifacts import MAIN_SERVICE, entries, filtered_archive, read_capped

    api = engine.api()
    # The publish directory exists, world-writable, whatever was collected (as Harbor creates it).
    api.put_archive(target, "/", _dir_archive([("logs", 0o755), ("logs/artifacts", 0o777)]))
    for item in entries(task):
        if (item.service or MAIN_SERVICE) != MAIN_SERVICE:
            continue  # sidecar artifacts: not carried over (README: what still differs)
        source = item.source.rstrip("/") or "/"
        try:
            stream, stat = api.get_archive(agent, source)
            data = read_capped(stream)
        except (NotFound, APIError):
            continue  # a declared artifact the agent never produced
        except Exception:  # noqa: BLE001 - a stream that broke mid-way: the agent's artifact is lost, not the verdict
            continue
        if data is None:
            continue
        is_dir = bool(stat.get("mode", 0) & (1 << 31))
        parent = str(PurePosixPath(source).parent)
        prepare = ["/bin/sh", "-c", 'rm -rf "$1"; mkdir -p "$2"' if is_dir and source != ARTIFACTS_DIR
                   else 'mkdir -p "$2"', "sh", source, parent]
        with contextlib.suppress(Exception):  # an image without a shell: the parent must exist already
            engine.run_exec(target, prepare, user="root", timeout=60)
        with contextlib.suppress(NotFound, APIError):  # best effort, as Harbor's upload
            api.put_archive(target, parent, filtered_archive(data, item.exclude if is_dir else []))


def _dir_archive(dirs: list[tuple[str, int]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, mode in dirs:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
    return buf.getvalue()


def create(agent_container: str, task: LoadedTask, hardened: bool = False,
           probe: Callable[[str, str | None], None] | None = None) -> Snapshot:
    """Start the separate verification container, with the agent's artifacts copied in.

    `hardened` (strict mode) gives it the boundary a shared-mode verification container gets
    (`rsr.verify.snapshot.create_pristine`): /tests read-only and, when the tests run as root,
    /tests and /logs/verifier root-only; the seccomp profile; no privileges gained through exec.
    `probe(container, cwd)` is called on the pristine container before any artifact of the
    agent's is copied in (invariant 4: a verifier that cannot start there is an infrastructure
    error; one that cannot start afterwards is the agent's failure)."""
    api = engine.api()
    agent = api.inspect_container(agent_container)
    cfg, bundled = verifier_image(task, agent["Config"]["Image"])
    ensure_image(cfg)
    host_dir, tests_dir, logs_dir = host_dirs("separate-")
    binds: dict[str, Any] = {str(logs_dir): {"bind": VERIFIER_LOG_DIR, "mode": "rw"}}
    if not bundled:
        stage_tests(task, tests_dir)
        binds[str(tests_dir)] = {"bind": TESTS_MOUNT, "mode": "ro" if hardened else "rw"}
    if hardened and task.config.verifier.user in (None, "", "root", "0"):
        for d in [tests_dir, *[p for p in tests_dir.rglob("*") if p.is_dir()]]:
            d.chmod(0o700)
        logs_dir.chmod(0o700)
    env = cfg.model_dump()
    host = host_config(RsrDockerConfig(**env))
    host["binds"] = binds
    if hardened:
        from rsr.verify.seccomp import security_options

        host["security_opt"] = security_options(task.config.verifier.allow_ptrace)
    try:
        created = api.create_container(
            cfg.image, command=KEEPALIVE, entrypoint=[], working_dir=cfg.workdir or None,
            environment=[f"{k}={v}" for k, v in (task.config.environment.env or {}).items()] or None,
            labels={engine.LABEL_SANDBOX: "rsr-verify", engine.LABEL_OWNER: str(os.getpid()),
                    engine.LABEL_ROLE: "verifier", engine.LABEL_TASK: task.name},
            stop_signal="SIGKILL", host_config=api.create_host_config(**host))
        container = created["Id"]
        api.start(container)
        workdir = cfg.workdir or api.inspect_container(container)["Config"].get("WorkingDir") or "/"
        if probe is not None:
            probe(container, task.workdir or workdir)
    except Exception:
        shutil.rmtree(host_dir, ignore_errors=True)
        if "container" in locals():
            engine.remove_container(container)
        raise
    try:
        _copy_artifacts(agent_container, container, task)
    except Exception as e:  # noqa: BLE001 - what the agent published is the agent's: never infra
        notes = [f"the agent's artifacts could not be copied whole: {type(e).__name__}: {e}"]
    else:
        notes = []
    # No image of ours to remove afterwards: the verifier's image is the task's (kept, built once).
    return Snapshot(container=container, image="", host_dir=host_dir, working_dir=workdir, path_env=None,
                    notes=notes)
