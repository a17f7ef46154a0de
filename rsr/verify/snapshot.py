"""A verification container: the agent's final filesystem, none of its processes.

The agent's container is committed to a throwaway image (or, on the deliverables path, its
pristine image gets the agent's kept changes) and a fresh container is started from it, with
its own PID and mount namespaces. Under strict it has a network of its own as well, and joins
the agent container's network namespace only to reach a compose task's sidecars (then strict
refuses to vouch); under warn it joins it, so servers the agent left running stay reachable on
localhost. `/tests` and `/logs/verifier` are per-sample host directories that rsr creates, so
test files go in and the reward comes out without any command of the container's (whose `tar`,
`cat` or `sh` the agent may have replaced) and without anything the agent left at those paths.

Two of the verifier's runtime invariants are enforced here (README, "Verifier: the contract"):
`agent_frozen` (1: no agent process runs while the tests do) and `RunEnd` (2: the test run ends
when test.sh exits).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    notes: list[str] = field(default_factory=list)
    """What the verifier should report about how this container was prepared."""

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


class RunEnd:
    """Invariant 2, "the test run ends when test.sh exits", enforced: called (by
    `engine.run_exec`'s `on_exit`) at the instant the test command's own process exits, it
    freezes every process of the verification container at once (its cgroup freezer), lists
    them (the survivors: whatever the tests started that outlived test.sh) and kills them all
    before anything is read; no reward file or output can be written after that point. Cost:
    one inspect before the run (~5 ms), a few host file writes at its end (< 1 ms).

    Idempotent: called again after the run (a timeout, an engine whose processes this host
    cannot see) it does the same, late but before any read."""

    def __init__(self, container: str) -> None:
        self.container = container
        self.survivors: list[str] | None = None
        try:
            self.init_pid = int(engine.api().inspect_container(container)["State"].get("Pid") or 0)
        except (APIError, NotFound):
            self.init_pid = 0
        self.freezer = _freezer(self.init_pid)
        # Opened now, so that at the exit the freeze is a single write.
        self._freeze_fd: int | None = None
        if self.freezer is not None:
            try:
                self._freeze_fd = os.open(self.freezer[0], os.O_WRONLY)
            except OSError:
                self.freezer = None

    def __call__(self) -> None:
        if self.survivors is not None:
            return
        pids: list[int] = []
        if self.freezer is not None and self._freeze_fd is not None:
            state, procs = self.freezer
            try:
                os.write(self._freeze_fd, b"FROZEN" if state.name == "freezer.state" else b"1")
                _frozen_wait(state)
                pids = _cgroup_pids(procs)
            except OSError:
                self.freezer = None
            finally:
                os.close(self._freeze_fd)
                self._freeze_fd = None
        if self.freezer is None and self.init_pid > 0:
            pids = _namespace_pids(self.init_pid)
        self.survivors = [cmd for pid in pids if pid != self.init_pid and (cmd := _cmdline(pid))]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.freezer is not None:
            try:
                _thaw(self.freezer[0])
            except OSError:
                pass
        if not pids:
            # Processes this host cannot see (a remote engine): the engine kills them.
            try:
                engine.api().kill(self.container)
            except (APIError, NotFound):
                pass


def _freezer(pid: int) -> tuple[Path, Path] | None:
    """(state file, process list) of the cgroup freezer holding `pid`'s container, v1 or v2."""
    if pid <= 0:
        return None
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "freezer" in controllers.split(","):
            base = Path("/sys/fs/cgroup/freezer") / path.lstrip("/")
            if (base / "freezer.state").is_file():
                return base / "freezer.state", base / "cgroup.procs"
    for line in lines:
        if line.startswith("0::"):
            base = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
            if (base / "cgroup.freeze").is_file():
                return base / "cgroup.freeze", base / "cgroup.procs"
    return None


def _frozen_wait(state: Path) -> None:
    v1 = state.name == "freezer.state"
    # Freezing completes asynchronously; the list is read once nothing can fork any more.
    for _ in range(200):
        if v1 and state.read_text().strip() == "FROZEN":
            return
        if not v1 and "frozen 1" in (state.parent / "cgroup.events").read_text():
            return
        time.sleep(0.001)


def _thaw(state: Path) -> None:
    state.write_text("THAWED" if state.name == "freezer.state" else "0")


def _cgroup_pids(procs: Path) -> list[int]:
    return [int(p) for p in procs.read_text().split()]


def _namespace_pids(init_pid: int) -> list[int]:
    """Every process in `init_pid`'s PID namespace, from the host's /proc (no freezer here)."""
    try:
        ns = os.readlink(f"/proc/{init_pid}/ns/pid")
    except OSError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") == ns:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _cmdline(pid: int) -> str:
    """A live process's command line ('' for a zombie or a process gone meanwhile)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


@contextlib.contextmanager
def agent_frozen(container: str | None) -> Iterator[None]:
    """Invariant 1, "no agent process exists when the tests start", enforced: the agent's
    container is paused (every process frozen by its cgroup) from before its changes are read
    until the test run has ended, and resumed afterwards (a mid-run check, a next step). Cost:
    one pause and one unpause (~20 ms together)."""
    paused = False
    if container is not None:
        try:
            state = engine.api().inspect_container(container).get("State") or {}
            if state.get("Running") and not state.get("Paused"):
                engine.api().pause(container)
                paused = True
        except (APIError, NotFound):
            pass
    try:
        yield
    finally:
        if paused:
            try:
                engine.api().unpause(container)
            except (APIError, NotFound):
                pass


def listening_ports(container: str) -> list[str]:
    """TCP ports listening in the container's network namespace ('tcp 8080'), from the host's
    /proc: services the agent left running, which strict mode does not carry to the tests."""
    try:
        pid = int(engine.api().inspect_container(container)["State"].get("Pid") or 0)
    except (APIError, NotFound):
        return []
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":  # LISTEN
                found.add(f"tcp {int(fields[1].rsplit(':', 1)[1], 16)}")
    return sorted(found)


def network_peers(agent_container: str) -> list[str]:
    """Other containers living in the agent container's network namespace (a compose task's
    sidecars join it): services the tests may need, which a verification container can reach
    only by joining that namespace too."""
    api = engine.api()
    info = api.inspect_container(agent_container)
    project = (info["Config"].get("Labels") or {}).get("com.docker.compose.project")
    if not project:
        return []
    ours = {f"container:{info['Id']}", f"container:{info['Name'].lstrip('/')}"}
    return [(c.get("Names") or [c["Id"][:12]])[0].lstrip("/")
            for c in api.containers(filters={"label": f"com.docker.compose.project={project}"})
            if (c.get("HostConfig") or {}).get("NetworkMode") in ours]


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
