"""A verification container: the agent's final filesystem, none of its processes.

The agent's container is committed to a throwaway image and a fresh container is started from
it. It joins the agent container's network namespace, so servers the agent left running stay
reachable on localhost, but it has its own PID and mount namespaces: no agent process can see
or touch the tests. `/tests` and `/logs/verifier` are per-sample host directories
that rsr creates, so test files go in and the reward comes out without any command of the
container's (whose `tar`, `cat` or `sh` the agent may have replaced) and without anything the
agent left at those paths.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound

from rsr.sandbox import engine
from rsr.sandbox.cache import cache_dir
from rsr.tasks.load import TESTS_MOUNT, VERIFIER_LOG_DIR, LoadedTask

KEEPALIVE = ["sleep", "infinity"]


@dataclass
class Snapshot:
    container: str
    image: str
    host_dir: Path
    working_dir: str
    path_env: str | None

    @property
    def tests_dir(self) -> Path:
        return self.host_dir / "tests"

    @property
    def logs_dir(self) -> Path:
        return self.host_dir / "verifier"


def host_dirs(prefix: str) -> tuple[Path, Path, Path]:
    """A fresh per-sample (host dir, its tests/, its world-writable verifier/ for the reward)."""
    host_dir = Path(tempfile.mkdtemp(prefix=prefix, dir=cache_dir("verify")))
    tests_dir, logs_dir = host_dir / "tests", host_dir / "verifier"
    tests_dir.mkdir()
    logs_dir.mkdir()
    logs_dir.chmod(0o777)
    host_dir.chmod(0o755)
    return host_dir, tests_dir, logs_dir


def installs_executable(host_path: Path, container_path: str) -> bool:
    """Whether a test file is installed executable: as on disk, and every shell script."""
    return os.access(host_path, os.X_OK) or container_path.endswith(".sh")


def stage_tests(task: LoadedTask, tests_dir: Path) -> None:
    """Copy the task's verifier files into the host directory mounted at /tests."""
    for container_path, host_path in task.test_files().items():
        rel = Path(container_path).relative_to(TESTS_MOUNT)
        target = tests_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(host_path, target)
        mode = 0o755 if installs_executable(host_path, container_path) else 0o644
        target.chmod(mode)
    for d in [tests_dir, *[p for p in tests_dir.rglob("*") if p.is_dir()]]:
        d.chmod(0o755)


def create_pristine(agent_container: str | None, task: LoadedTask, image: str, *, join_network: bool = True,
                    hardened: bool = False, template: dict[str, Any] | None = None,
                    agent_volumes: bool = False) -> Snapshot:
    """Start a verification container of the pristine task `image` (the agent's changes are
    applied afterwards, `rsr.verify.deliverables.apply`). Limits, environment and working
    directory come from the agent container's configuration (`template`: an inspect_container
    result, for a regrade whose agent container is long gone); with `join_network` it shares
    the agent container's network namespace.

    `hardened` (strict mode): /tests read-only and, when the tests run as root, /tests and
    /logs/verifier are root-only, so a deliverable the tests run unprivileged reads neither;
    the seccomp boundary of `rsr.verify.seccomp`; no privileges gained through exec."""
    api = engine.api()
    source = template or api.inspect_container(agent_container)
    host_dir, tests_dir, logs_dir = host_dirs("sample-")
    stage_tests(task, tests_dir)
    cfg_user = task.config.verifier.user
    if hardened and cfg_user in (None, "", "root", "0"):
        for d in [tests_dir, *[p for p in tests_dir.rglob("*") if p.is_dir()]]:
            d.chmod(0o700)
        logs_dir.chmod(0o700)
    limits = source["HostConfig"]
    config = source["Config"]
    env = list(config.get("Env") or [])
    path_env = next((e.split("=", 1)[1] for e in env if e.startswith("PATH=")), None)
    labels = dict(config.get("Labels") or {})
    labels.update({engine.LABEL_SANDBOX: "rsr-verify", engine.LABEL_OWNER: str(os.getpid()),
                   engine.LABEL_ROLE: "verifier"})
    network = "none"
    if agent_container and join_network:
        network = f"container:{agent_container}"
    elif not join_network:
        network = _own_network(limits)
    from rsr.verify.seccomp import security_options

    host: dict[str, Any] = {
        "network_mode": network,
        "nano_cpus": limits.get("NanoCpus") or None,
        "mem_limit": limits.get("Memory") or None,
        "memswap_limit": limits.get("MemorySwap") or None,
        "pids_limit": limits.get("PidsLimit") or None,
        "binds": {str(tests_dir): {"bind": TESTS_MOUNT, "mode": "ro" if hardened else "rw"},
                  str(logs_dir): {"bind": VERIFIER_LOG_DIR, "mode": "rw"}},
        "device_requests": limits.get("DeviceRequests") or None,
        # The agent's volumes (an image's VOLUME, a compose volume) are not in its layer. The
        # capture reads and judges them (rsr.verify.deliverables.volume_dirs), so the tests get
        # the image's own fresh volumes with the kept changes applied; only the commit fallback
        # (`agent_volumes`) shows them as the agent left them.
        "volumes_from": [agent_container] if agent_volumes and agent_container and source.get("Mounts") else None,
        "security_opt": security_options(task.config.verifier.allow_ptrace) if hardened else None,
    }
    try:
        created = api.create_container(
            image, command=KEEPALIVE, entrypoint=[], working_dir=config.get("WorkingDir") or None,
            environment=env, labels=labels, stop_signal="SIGKILL",
            host_config=api.create_host_config(**{k: v for k, v in host.items() if v is not None}))
        container = created["Id"]
        api.start(container)
    except Exception:
        shutil.rmtree(host_dir, ignore_errors=True)
        raise
    # The image is the task's, not ours: destroy() must not remove it.
    return Snapshot(container=container, image="", host_dir=host_dir,
                    working_dir=config.get("WorkingDir") or "/", path_env=path_env)


def create(agent_container: str, task: LoadedTask, join_network: bool = True) -> Snapshot:
    """Commit the agent's container and start a verification container from it; with
    `join_network=False` it gets a network of its own (none, or the agent's kind of network
    when the task allows internet) instead of the agent container's namespace."""
    api = engine.api()
    source = api.inspect_container(agent_container)
    tag = f"rsr-verify:{uuid.uuid4().hex[:16]}"
    # pause=True (the default) freezes the agent's processes while the filesystem is copied.
    # Labelled with its owner so a crashed run's snapshot images are found and removed later.
    image = api.commit(agent_container, repository=tag.split(":")[0], tag=tag.split(":")[1],
                       conf={"Labels": {**(source["Config"].get("Labels") or {}), engine.LABEL_SANDBOX: "rsr-verify",
                                        engine.LABEL_OWNER: str(os.getpid())}})["Id"]
    try:
        snap = create_pristine(agent_container, task, image, join_network=join_network, template=source,
                               agent_volumes=True)
    except Exception:
        _remove_image(image)
        raise
    snap.image = image  # ours: destroy() removes it
    return snap


def _own_network(agent_host_config: dict[str, Any]) -> str:
    mode = agent_host_config.get("NetworkMode") or "none"
    return "none" if mode.startswith("container:") else mode


def survivors(container: str) -> list[str]:
    """Commands still running in the container besides its keep-alive PID 1 (host-side `top`)."""
    api = engine.api()
    try:
        init_pid = str(api.inspect_container(container)["State"]["Pid"])
        top = api.top(container, ps_args="-eo pid,args")
    except (APIError, NotFound):
        return []
    titles = [t.upper() for t in top.get("Titles", [])]
    pid_col = titles.index("PID") if "PID" in titles else 0
    args_col = titles.index("ARGS") if "ARGS" in titles else len(titles) - 1
    return [" ".join(row[args_col:]) for row in top.get("Processes") or [] if row[pid_col] != init_pid]


def freeze(container: str) -> None:
    """Stop every process of the container at once (the reward is read after this)."""
    try:
        engine.api().kill(container)
    except (APIError, NotFound):
        pass


def destroy(snapshot: Snapshot) -> None:
    engine.remove_container(snapshot.container)
    if snapshot.image:
        _remove_image(snapshot.image)
    shutil.rmtree(snapshot.host_dir, ignore_errors=True)


def _remove_image(image: str) -> None:
    try:
        engine.api().remove_image(image, force=True, noprune=False)
    except (APIError, NotFound):
        pass


def read_reward_files(logs_dir: Path) -> dict[str, bytes | None]:
    """reward.txt / reward.json from the host directory, refusing anything but regular files."""
    found: dict[str, bytes | None] = {}
    for name in ("reward.txt", "reward.json"):
        path = logs_dir / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            found[name] = None
            continue
        except OSError as e:
            raise ValueError(f"{VERIFIER_LOG_DIR}/{name} is not a regular file ({e.strerror})") from e
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError(f"{VERIFIER_LOG_DIR}/{name} is not a regular file")
            with os.fdopen(fd, "rb", closefd=False) as f:
                found[name] = f.read(1 << 20)
        finally:
            os.close(fd)
    return found
