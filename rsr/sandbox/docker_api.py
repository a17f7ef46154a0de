"""`rsr-docker`: an Inspect sandbox environment on the Docker Engine API.

Single-container tasks (nearly all real ones) run here instead of through `docker compose`:
a sample's container is created, started, exec'd into and removed with direct API calls
(about 50 ms an exec instead of ~180 ms through the compose CLI), files move as tar archives,
and the verifier gets what Compose cannot give it cheaply: host-side reads, the container's
filesystem diff, and a commit of the agent's final filesystem.

Guarantees match the compose path: the task's cpus, memory (no swap beyond it) and pids
limits, no network unless the task allows it, its workdir and env, never the Docker socket,
PID 1 that ignores in-container signals; plus a storage watchdog (overlay2 has no quota
here) that ends the sample as a scored failure. Everything created is labelled with the
owning process, so `inspect sandbox cleanup rsr-docker` (or the next run) removes what a
crashed run left behind.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import threading
import time
from pathlib import PurePosixPath
from typing import Any, Literal, overload

from docker.errors import APIError, NotFound
from inspect_ai.util import (
    ExecResult,
    LimitExceededError,
    SandboxConnection,
    SandboxEnvironment,
    sandboxenv,
)
from inspect_ai.util._sandbox.environment import SandboxUnavailableError, sandbox_prebuilt
from pydantic import BaseModel, ConfigDict

from rsr.sandbox import engine, stops
from rsr.sandbox.fate import container_fate
from rsr.sandbox.infra import (
    ImageBuildError,
    ImageMissingError,
    ImagePullError,
    InfraError,
    InfraSandbox,
    note_infra,
)
from rsr.sandbox.pull import ImagePolicy, ResolvedImage, image_present, local_image, pull_image, resolved

logger = logging.getLogger(__name__)

SANDBOX_NAME = stops.WATCHED
KEEPALIVE = ["sleep", "infinity"]
DEFAULT_PIDS_LIMIT = 4096
STORAGE_POLL_SECONDS = 1.0
START_ATTEMPTS = 2
STOP_WATCH_WAIT_SECONDS = 10.0
ENGINE_WAIT_SECONDS = float(os.environ.get("RSR_ENGINE_WAIT_S", "60"))
"""How long a sample's start waits for an engine that does not answer (a daemon restarting)."""
"""Container starts tried per sample before it ends as an infrastructure error."""


class RsrDockerConfig(BaseModel):
    """One task's container, as the sandbox creates it (recorded in the eval log)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    image: str
    """What the container runs: the task's prebuilt `docker_image`, or the tag a build makes."""
    build_context: str | None = None
    """Directory with the Dockerfile; None when there is nothing to build."""
    build_image: str | None = None
    """Under `auto`, for a prebuilt `image` with a Dockerfile: the tag the Dockerfile is built
    into when the pull fails (None: `image` itself is what a build makes)."""
    image_policy: ImagePolicy = "auto"
    """rsr.sandbox.pull: where the image may come from (auto, force-build, never)."""
    dockerfile: str = "Dockerfile"
    build_timeout_sec: float = 600.0
    cpus: float = 1.0
    memory_mb: int = 2048
    storage_mb: int | None = None
    pids_limit: int | None = None
    """None: chosen so that concurrent sandboxes x limit stays well below the host's pid_max."""
    network: Literal["none", "bridge", "host"] = "none"
    workdir: str | None = None
    env: dict[str, str] = {}
    gpus: int = 0

    def __hash__(self) -> int:
        # Inspect groups samples by sandbox config in a set; `env` is a dict.
        return hash(self.model_dump_json())


def host_pid_max() -> int:
    try:
        with open("/proc/sys/kernel/pid_max") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 32768


def max_sandboxes_hint() -> int:
    """How many sandboxes may run at once: `RSR_MAX_SANDBOXES`, else Inspect's default (2 x CPUs)."""
    value = os.environ.get("RSR_MAX_SANDBOXES", "")
    return int(value) if value.isdigit() and int(value) > 0 else 2 * (os.cpu_count() or 1)


def pids_limit(requested: int | None) -> int:
    """A per-sandbox pids limit such that every sandbox forking to its limit at once still
    leaves half of the host's pid_max to the host."""
    budget = max(64, host_pid_max() // (2 * max_sandboxes_hint()))
    return min(requested or DEFAULT_PIDS_LIMIT, budget)


class _Images:
    """Finds, pulls or builds each image once per process (rsr.sandbox.pull has the policy);
    failures are remembered so every sample of a broken task reports the same error while the
    other tasks run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.errors: dict[str, ImageBuildError] = {}
        self.found: dict[str, ResolvedImage] = {}
        self.busy: dict[str, threading.Lock] = {}

    def ensure(self, config: RsrDockerConfig) -> ResolvedImage:
        policy = "never" if sandbox_prebuilt() else config.image_policy
        key = f"{config.image}|{policy}|{config.build_context}|{config.build_image}"
        with self.lock:
            key_lock = self.busy.setdefault(key, threading.Lock())
        with key_lock:
            if key in self.errors:  # a fresh exception per sample: one traceback each
                failed = self.errors[key]
                raise type(failed)(str(failed))
            known = self.found.get(key)
            if known is not None and image_present(known.name):
                return known
            try:
                found = self._resolve(config, policy)
            except ImageBuildError as e:
                self.errors[key] = e
                raise
            self.found[key] = found
            return found

    def _resolve(self, config: RsrDockerConfig, policy: str) -> ResolvedImage:
        local = local_image(config.image, policy)
        if local is not None:
            return local
        prebuilt = config.build_context is None or config.build_image is not None
        if policy == "never":
            why = "--sandbox-prebuilt" if sandbox_prebuilt() else "-T images=never"
            fix = (f"drop {why} to let rsr pull it, or `docker pull {config.image}` / `docker load -i FILE` it first"
                   if prebuilt else f"drop {why} to let rsr build it from the task's Dockerfile")
            raise ImageMissingError(f"image {config.image!r} for task {config.task!r} is not on this engine, "
                                    f"and {why} allows no pull or build; {fix}")
        if not prebuilt:
            self._build(config, config.image)
            return resolved(config.image, "built", policy)
        try:
            return pull_image(config.image, task=config.task, has_dockerfile=config.build_context is not None,
                              policy=policy)
        except ImagePullError as e:
            if config.build_context is None or config.build_image is None:
                raise
            note = (f"pulling image {config.image!r} failed ({e.reason}); built from the task's "
                    f"Dockerfile as {config.build_image} instead")
            print(f"[build {config.task}] pulling {config.image} failed ({e.reason}); building the task's "
                  "Dockerfile instead", file=sys.stderr, flush=True)
        if not image_present(config.build_image):
            try:
                self._build(config, config.build_image)
            except ImageBuildError as e:
                raise ImageBuildError(f"pulling image {config.image!r} failed, and so did building the task's "
                                      f"Dockerfile instead: {e}") from e
        return resolved(config.build_image, "built", policy, note=note)

    def _build(self, config: RsrDockerConfig, tag: str) -> None:
        progress = BuildProgress(config.task)
        try:
            # Builds use the host network: the package mirror is reachable only from there.
            for chunk in engine.api().build(path=config.build_context, dockerfile=config.dockerfile,
                                            tag=tag, network_mode="host", rm=True,
                                            forcerm=True, decode=True,
                                            timeout=int(config.build_timeout_sec),
                                            labels={engine.LABEL_TASK: config.task}):
                if "stream" in chunk:
                    progress.feed(chunk["stream"])
                if "error" in chunk:
                    raise APIError(chunk["error"])
        except (APIError, OSError) as e:
            raise ImageBuildError(progress.failure(e)) from e
        progress.done()


class BuildProgress:
    """One line per build step with the time since the build started (on stderr, where it shows
    above Inspect's display); on failure, the failing step and only its last output lines."""

    TAIL_LINES = 15

    def __init__(self, task: str, out: Any = None) -> None:
        self.task = task
        self.out = out
        self.started = time.monotonic()
        self.step = ""
        self.lines: list[str] = []
        self._partial = ""

    def _say(self, text: str) -> None:
        print(f"[build {self.task}] {text} ({time.monotonic() - self.started:.1f} s)",
              file=self.out or sys.stderr, flush=True)

    def feed(self, stream: str) -> None:
        text = self._partial + stream
        *complete, self._partial = text.split("\n")
        for line in complete:
            if _STEP.match(line):
                self.step = line.strip()
                self.lines = []
                self._say(self.step)
            elif line.strip():
                self.lines.append(line.rstrip())

    def failure(self, error: Exception) -> str:
        if self._partial.strip():
            self.lines.append(self._partial.rstrip())
        tail = self.lines[-self.TAIL_LINES:]
        where = f" at {self.step}" if self.step else ""
        self._say(f"failed{where}")
        cut = f"(last {len(tail)} of {len(self.lines)} lines)" if len(self.lines) > len(tail) else ""
        return (f"building the image of task {self.task!r} failed{where}: {str(error).strip()}\n"
                + (f"output of that step {cut}:\n" if tail else "") + "\n".join(tail))

    def done(self) -> None:
        self._say("built")


_STEP = re.compile(r"^Step \d+/\d+ : ")


_images = _Images()


def ensure_image(config: RsrDockerConfig) -> ResolvedImage:
    """Find, pull or build the image of `config` (once per process), as its policy allows;
    an ImageBuildError (ImagePullError, ImageMissingError) says why not."""
    return _images.ensure(config)


@sandboxenv(name=SANDBOX_NAME)
class RsrDockerSandbox(SandboxEnvironment):
    """One container per sample, driven through the Docker Engine API."""

    def __init__(self, container: str, config: RsrDockerConfig, working_dir: str,
                 image: ResolvedImage | None = None) -> None:
        super().__init__()
        self.container = container
        self.config = config
        self.image = image
        """The image the container runs, as found, pulled or built (the sample records it)."""
        self.working_dir = working_dir
        self.storage_exceeded: str | None = None
        """Set by the storage watchdog: why the sample was stopped."""
        self.agent_began = False
        """Set when the sample's setup is done and its agent begins (rsr.suites.sandbox_guard):
        a container that stops from inside before then is the infrastructure's, after it the
        agent's (rsr.sandbox.fate)."""
        self._watchdog: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return RsrDockerConfig(**config)

    @classmethod
    def default_concurrency(cls) -> int | None:
        return max_sandboxes_hint()

    @classmethod
    async def task_init(cls, task_name: str, config: Any) -> None:
        # A run that crashed (or was killed) left labelled containers and snapshots: remove them now.
        await asyncio.to_thread(engine.remove_orphans)
        cfg = _config(config)
        try:
            await asyncio.to_thread(_images.ensure, cfg)
        except ImageBuildError as e:
            # One broken task must not sink the run: its samples fail in sample_init with this.
            logger.warning("%s", str(e).splitlines()[0])

    @classmethod
    async def sample_init(cls, task_name: str, config: Any, metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        cfg = _config(config)
        # An engine that is restarting (a retried sample after the daemon went away) gets a
        # moment to come back before this sample's start counts as failed.
        await asyncio.to_thread(engine.wait_for_engine, ENGINE_WAIT_SECONDS)
        # Who stops the container is read from the engine's events, streamed from before it
        # starts (rsr.sandbox.stops); a stream that is not up reads as infra, never as the agent's.
        await asyncio.to_thread(stops.watch, STOP_WATCH_WAIT_SECONDS)
        # A sandbox that cannot start is the infrastructure's failure, not the agent's: the sample
        # goes on with a stand-in that carries why (rsr.sandbox.infra), so it ends scored as a
        # failure and counted as an infra error instead of dropping out of the headline.
        try:
            image = await asyncio.to_thread(_images.ensure, cfg)
        except InfraError as e:
            return {"default": InfraSandbox(e)}
        for attempt in range(START_ATTEMPTS):
            try:
                container, workdir = await asyncio.to_thread(_create_container, task_name, cfg, image.name)
                break
            except Exception as e:  # noqa: BLE001 - any engine failure here happened before the agent
                # A scored sample is not retried by eval-retry or eval_set: retry a start here.
                if attempt + 1 < START_ATTEMPTS:
                    await asyncio.sleep(1.0)
                    continue
                return {"default": InfraSandbox(InfraError(
                    f"the sandbox container of task {cfg.task!r} could not be started ({START_ATTEMPTS} "
                    f"attempts): {type(e).__name__}: {e}", kind="sandbox"))}
        sbx = cls(container, cfg, workdir, image)
        if cfg.storage_mb:
            sbx._watchdog = asyncio.create_task(sbx._watch_storage(cfg.storage_mb))
        return {"default": sbx}

    @classmethod
    async def sample_cleanup(cls, task_name: str, config: Any, environments: dict[str, SandboxEnvironment],
                             interrupted: bool) -> None:
        for env in environments.values():
            if isinstance(env, RsrDockerSandbox):
                if env._watchdog is not None:
                    env._watchdog.cancel()
                await asyncio.to_thread(engine.remove_container, env.container)

    @classmethod
    async def task_cleanup(cls, task_name: str, config: Any, cleanup: bool) -> None:
        if not cleanup:  # --no-sandbox-cleanup: keep this run's agent containers, and say so
            # (Inspect calls this once at shutdown with task_name "shutdown": every task's.)
            ours = [i for i in await asyncio.to_thread(engine.owned_containers)
                    if (i.get("Labels") or {}).get(engine.LABEL_ROLE) == "agent"]
            for info in ours:
                name = await asyncio.to_thread(engine.keep_container, info)
                print(f"rsr-docker kept container {name} (task {(info.get('Labels') or {}).get('rsr.task-name')}): "
                      f"docker exec -it {name} bash; remove it with "
                      f"`inspect sandbox cleanup rsr-docker {name}`")
            return
        for info in await asyncio.to_thread(engine.owned_containers):
            if (info.get("Labels") or {}).get(engine.LABEL_TASK) == task_name:
                await asyncio.to_thread(engine.remove_container, info["Id"])

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """`inspect sandbox cleanup rsr-docker [ID]`: what runs that are gone left behind (or ID)."""
        if id:
            await asyncio.to_thread(engine.remove_container, id)
            print(f"removed container {id}")
            return
        removed = await asyncio.to_thread(engine.remove_orphans)
        kept = await asyncio.to_thread(engine.kept_containers)  # asked for by name-less cleanup too
        for info in kept:
            await asyncio.to_thread(engine.remove_container, info["Id"])
        print(f"removed {removed} rsr-docker container(s) and snapshot image(s) of runs that are gone"
              + (f", and {len(kept)} kept with --no-sandbox-cleanup" if kept else ""))

    def begin_agent(self) -> None:
        """The sample's setup is done: from now on the agent acts in the container."""
        self.agent_began = True

    def pause_watchdog(self) -> None:
        """Stop watching storage (the verifier measures it once, host-side, when it starts)."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    async def _watch_storage(self, limit_mb: int) -> None:
        while True:
            await asyncio.sleep(STORAGE_POLL_SECONDS)
            try:
                used = await asyncio.to_thread(engine.writable_bytes, self.container)
            except (APIError, NotFound):
                return
            if used > limit_mb * 1024 * 1024:
                self.storage_exceeded = (f"the sandbox wrote {used / 2**20:.0f} MB, above the task's "
                                         f"storage limit of {limit_mb} MB")
                # Stop the writer at once: the verifier reports the sample as a scored failure.
                await asyncio.to_thread(_kill, self.container)
                return

    # -- exec and files --------------------------------------------------------------------

    async def raise_fate(self, error: BaseException | None = None) -> None:
        """After a failed call (or before verifying): if the container is no longer running,
        raise what the engine says ended it. Stopped from outside or the engine gone: an
        InfraError (noted in the sample's store; Inspect may retry the sample, the scorer
        counts it apart). Stopped for memory or from inside (PID 1 made to exit): the agent's
        failure, a limit like the storage watchdog's (the scorer scores it 0, not as infra).
        Running: return."""
        self._check_storage()  # stopped by the storage watchdog: the agent's limit, not infra
        fate = await asyncio.to_thread(container_fate, self.container, agent_began=self.agent_began)
        if fate.running:
            return
        if fate.oom:
            limit = float(self.config.memory_mb)
            raise LimitExceededError("custom", value=limit + 1, limit=limit, message=fate.oom) from error
        if fate.exited:
            # The agent ended its own container: a verdict like a limit, never an error (an
            # error would be retried, a second attempt the agent bought itself).
            raise LimitExceededError("custom", value=1, limit=0, message=fate.exited) from error
        assert fate.infra is not None
        note_infra(fate.infra)
        raise fate.infra from error

    def _check_storage(self) -> None:
        if self.storage_exceeded:
            limit = float(self.config.storage_mb or 0)
            raise LimitExceededError("custom", value=limit + 1, limit=limit,
                                     message=f"storage limit exceeded: {self.storage_exceeded}")

    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None, timeout: int | None = None,
                   timeout_retry: bool = True, concurrency: bool = True) -> ExecResult[str]:
        self._check_storage()
        workdir = PurePosixPath(self.working_dir if cwd is None else cwd)
        if not workdir.is_absolute():
            workdir = PurePosixPath(self.working_dir) / workdir
        data = input.encode() if isinstance(input, str) else input
        try:
            outcome = await asyncio.to_thread(engine.run_exec, self.container, cmd, input=data,
                                              cwd=str(workdir), env=env, user=user, timeout=timeout)
        except Exception as e:
            await self.raise_fate(e)  # checks the storage watchdog first
            text = str(e)
            if isinstance(e, APIError) and ("unable to find user" in text
                                            or "no such file or directory" in text.lower()):
                return ExecResult(success=False, returncode=126, stdout="", stderr=text)
            if isinstance(e, APIError) and ("is not running" in text or e.status_code == 404):
                raise SandboxUnavailableError(f"the sandbox container is not running: {text}") from e
            raise
        stdout = outcome.stdout.decode("utf-8", errors="replace")
        stderr = outcome.stderr.decode("utf-8", errors="replace")
        if outcome.timed_out:
            self._check_storage()
            error = TimeoutError(f"Command timed out after {timeout} seconds")
            if stdout or stderr:
                error.truncated_output = stdout + stderr  # type: ignore[attr-defined]
            raise error
        return ExecResult(success=outcome.returncode == 0, returncode=outcome.returncode,
                          stdout=stdout, stderr=stderr)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        self._check_storage()
        path = self._abs(file)
        data = contents.encode() if isinstance(contents, str) else contents
        try:
            await asyncio.to_thread(engine.put_archive, self.container, engine.tar_of({str(path): data}))
        except Exception as e:
            await self.raise_fate(e)
            if not isinstance(e, APIError):
                raise
            text = str(e)
            if "directory" in text.lower() and ("cannot" in text.lower() or "is a" in text.lower()):
                raise IsADirectoryError(f"{path} is a directory (container {self.container[:12]})") from e
            raise PermissionError(f"cannot write {path}: {text}") from e

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        path = self._abs(file)
        # Symlinks are followed inside the container's filesystem view, as `cat` would.
        try:
            data = await asyncio.to_thread(engine.get_file, self.container, str(path), follow=True)
        except Exception as e:
            await self.raise_fate(e)
            raise
        return data.decode("utf-8", errors="replace") if text else data

    async def connection(self, *, user: str | None = None) -> SandboxConnection:
        user_arg = f"--user {user} " if user else ""
        return SandboxConnection(type="docker", command=f"docker exec -it {user_arg}{self.container} bash -l",
                                 container=self.container)

    def default_polling_interval(self) -> float:
        return 0.2

    def _abs(self, file: str) -> PurePosixPath:
        path = PurePosixPath(file)
        return path if path.is_absolute() else PurePosixPath(self.working_dir) / path


def _config(config: Any) -> RsrDockerConfig:
    if isinstance(config, RsrDockerConfig):
        return config
    if isinstance(config, dict):
        return RsrDockerConfig(**config)
    raise ValueError(f"{SANDBOX_NAME} needs an RsrDockerConfig, got {type(config).__name__}")


def container_spec(task_name: str, cfg: RsrDockerConfig, image: str | None = None) -> dict[str, Any]:
    """Arguments of the engine's create call (without the host config); `image`: the one the
    policy resolved (default: the config's)."""
    return {
        "image": image or cfg.image,
        "command": KEEPALIVE,
        "working_dir": cfg.workdir,
        "environment": cfg.env or None,
        "labels": {engine.LABEL_SANDBOX: SANDBOX_NAME, engine.LABEL_OWNER: str(os.getpid()),
                   engine.LABEL_TASK: task_name, engine.LABEL_ROLE: "agent", "rsr.task-name": cfg.task},
        # PID 1 has no handlers, so signals from inside the container are dropped; from
        # outside, SIGKILL makes stopping immediate.
        "stop_signal": "SIGKILL",
    }


def host_config(cfg: RsrDockerConfig, network_mode: str | None = None) -> dict[str, Any]:
    memory = f"{int(cfg.memory_mb)}m"
    host: dict[str, Any] = {
        "network_mode": network_mode or cfg.network,
        "nano_cpus": int(cfg.cpus * 1e9),
        "mem_limit": memory,
        "memswap_limit": memory,
        "pids_limit": pids_limit(cfg.pids_limit),
        "init": False,
    }
    if cfg.gpus:
        from docker.types import DeviceRequest

        host["device_requests"] = [DeviceRequest(count=cfg.gpus, capabilities=[["gpu"]])]
    return host


def _create_container(task_name: str, cfg: RsrDockerConfig, image: str | None = None) -> tuple[str, str]:
    api = engine.api()
    spec = container_spec(task_name, cfg, image)
    created = api.create_container(**spec, host_config=api.create_host_config(**host_config(cfg)))
    container = created["Id"]
    try:
        api.start(container)
        workdir = cfg.workdir or api.inspect_container(container)["Config"].get("WorkingDir") or "/"
    except Exception:
        engine.remove_container(container)
        raise
    return container, workdir


def _kill(container: str) -> None:
    try:
        engine.api().kill(container)
    except (APIError, NotFound):
        pass
