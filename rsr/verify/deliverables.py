"""What of the agent's work reaches the checker: the deliverables, and nothing else.

The agent's container is paused (its processes frozen, so nothing changes while it is read)
and its overlay2 upper directory - every file it created, changed or deleted - is read on the
host. Each change is *kept* when it lies under the task's deliverable roots, otherwise
*dropped*; the kept changes become one tar archive, and that archive applied to a fresh
container of the pristine task image is exactly what the tests run on (and what an evidence
bundle stores, and what a regrade re-applies). Whatever the agent did elsewhere does not exist
for the checker: there is nothing to judge one by one.

Deliverable roots (`plan`):
- strict, task declares `[verifier] allow_changes` (every core task): the task's workdir and
  the declared globs - an allowlist;
- strict, task declares nothing (a Harbor task run with `-T integrity=strict`): the task's
  workdir and the roots inferred from its reference solution's own change set
  (`rsr.verify.inferred`, recorded per task digest outside the task), start-up hooks never
  carried - the same allowlist; with no inferred record strict mode refuses the task;
- warn (Harbor's own behaviour): everything, as Harbor's tests would see it.
In every plan `/tests`, `/logs/verifier` and `/solution` are never carried: the verifier
provides the first two itself and the last is never the agent's.
"""

from __future__ import annotations

import filecmp
import fnmatch
import hashlib
import os
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from docker.errors import APIError, NotFound
from pydantic import BaseModel, Field

from rsr.sandbox import engine
from rsr.sandbox.cache import cache_dir
from rsr.tasks.load import TESTS_MOUNT, VERIFIER_LOG_DIR

Trust = Literal["deliverables", "inferred", "audited", "harbor"]

NEVER_CARRIED = (TESTS_MOUNT, VERIFIER_LOG_DIR, "/solution")
# Bind-mounted by the engine into every container (the verification container gets its own):
# their placeholders in the upper directory are not the agent's.
ENGINE_MANAGED = ("/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/.dockerenv")
# Files whose mere presence makes every process (or every Python) run code at start-up. Under
# strict mode they are not carried unless a task declares them: a deliverable never needs the
# checker to execute it implicitly.
STARTUP_HOOKS = ("/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d/*", "/etc/environment",
                 "/etc/bash.bashrc", "/etc/profile", "/etc/profile.d/*", "/etc/python*/sitecustomize.py",
                 "*/sitecustomize.py", "*/usercustomize.py", "*/sitecustomize.*.so", "*/usercustomize.*.so",
                 "/root/.bashrc", "/root/.profile", "/root/.bash_profile", "/root/.gitconfig",
                 "/root/.config/git/*", "/etc/gitconfig")


class Plan(BaseModel):
    """Which changes reach the checker (see the module docstring)."""

    trust: Trust
    roots: list[str] = Field(default_factory=list)
    """Deliverable roots: directories (a path under one is kept) and globs (a path matching one,
    or whose ancestor matches one, is kept). Empty with trust 'audited'/'harbor': everything."""
    exact: list[str] = Field(default_factory=list)
    """trust 'inferred': paths kept themselves only (a file the reference wrote, a directory whose
    owner or mode it changed, a path it deleted), start-up hooks included: the reference needed
    exactly them, as a task's declared path."""
    inferred_from: str | None = None
    """trust 'inferred': the task digest whose reference solution's change set gave the roots."""
    workdir: str | None = None
    """The task's working directory: its deletion (or an ancestor's) is never carried, in any
    mode (invariant 4: the tests start where the pristine image lets them start)."""
    startup: list[str] = Field(default_factory=list)
    """Strict plans: what the tests execute as they start (`rsr.verify.startup_files`), never
    carried from the agent unless declared exactly or written by the reference solution."""


class Changes(BaseModel):
    """The agent's final filesystem changes that reach the checker, as one archive."""

    image: str
    """The pristine image the agent container was created from (its id)."""
    plan: Plan
    archive_path: str
    """A tar of the kept files, directories and links (member names are paths without the
    leading '/'); owners, modes and mtimes as the agent left them."""
    archive_sha256: str
    archive_bytes: int
    deleted: list[str] = Field(default_factory=list)
    """Kept deletions: image paths the agent removed (removed again before the archive goes in)."""
    kept: list[str] = Field(default_factory=list)
    """Every kept path; with `added`, what the residual audit judges."""
    added: list[str] = Field(default_factory=list)
    """Kept paths that the image did not have."""
    directories: list[str] = Field(default_factory=list)
    """Kept paths that are directories."""
    plugins: list[str] = Field(default_factory=list)
    """'path: what' for kept package metadata that makes a tool load code by itself (a pytest11
    entry point is imported by every pytest run that can see it)."""
    container: dict[str, Any] = Field(default_factory=dict)
    """The agent container's configuration the checker inherits (`Config`: Env, WorkingDir,
    Labels; `HostConfig`: limits), so a regrade can start the same verification container."""
    dropped: list[str] = Field(default_factory=list)
    """'path: why' for every change that does not reach the checker."""

    def package_test(self) -> Callable[[str], bool | None]:
        """is_package(path) for the audit: for a new kept directory, whether it is a regular
        Python package (has an `__init__`); None for anything else."""
        new_dirs = set(self.directories) & set(self.added)
        inits = {str(PurePosixPath(p).parent) for p in self.kept if PurePosixPath(p).name.startswith("__init__.")}

        def is_package(path: str) -> bool | None:
            return (path in inits) if path in new_dirs else None

        return is_package

    def read_archive(self) -> bytes:
        return Path(self.archive_path).read_bytes()

    def discard(self) -> None:
        Path(self.archive_path).unlink(missing_ok=True)


class ChangesTooLarge(RuntimeError):
    """The kept changes' apparent size is above the task's storage limit (a sparse file
    would otherwise become that many bytes on the host and in the verification container)."""


class CaptureUnavailable(RuntimeError):
    """The engine's storage cannot be read from this host (not overlay2, or a remote engine)."""


class NoDeliverables(RuntimeError):
    """Strict mode on a task that neither declares its deliverables nor has them inferred."""


def plan_for(mode: Literal["strict", "warn"], workdir: str | None, allow_changes: list[str] | None,
             inferred: Any = None, startup: Iterable[str] = ()) -> Plan:
    """The plan for a task: `inferred` (an `rsr.verify.inferred.InferredTask`) stands in for
    `allow_changes` on a task that declares none; strict mode on a task with neither raises
    NoDeliverables (a denylist of dangerous files would only wait for the next one)."""
    kept_dir = workdir.rstrip("/") or None if workdir else None
    if mode == "warn":
        return Plan(trust="harbor", workdir=kept_dir)
    roots = [kept_dir] if kept_dir else []
    hooks = [p for p in startup if p not in (allow_changes or [])]
    if allow_changes is not None:
        return Plan(trust="deliverables", roots=[*roots, *allow_changes], workdir=kept_dir, startup=hooks)
    if inferred is None:
        raise NoDeliverables("the task declares no deliverables (task.toml verifier.allow_changes) and none were "
                             "inferred for it")
    return Plan(trust="inferred", roots=[*roots, *(r for r in inferred.roots if r not in roots)],
                exact=list(inferred.exact), inferred_from=inferred.digest, workdir=kept_dir, startup=hooks)


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r + "/") for r in roots)


def _glob_keeps(path: str, pattern: str) -> bool:
    if not any(ch in pattern for ch in "*?["):
        return _under(path, [pattern.rstrip("/")])
    current = PurePosixPath(path)
    for candidate in (current, *current.parents):
        if fnmatch.fnmatchcase(str(candidate), pattern):
            return True
    return False


def why_dropped(path: str, plan: Plan, host_file: str | None = None, content: bytes | None = None,
                deleted: bool = False) -> str | None:
    """None when `path` reaches the checker under `plan`, else the reason it does not
    (`host_file` or `content`: the file's content, for hooks judged by content; `deleted`: the
    change is the path's removal, which runs nothing)."""
    if _under(path, NEVER_CARRIED):
        return "verifier-owned path (the verifier provides it)"
    if plan.trust == "harbor":
        return None
    if plan.trust == "inferred" and path in plan.exact:
        return None
    if not deleted and any(fnmatch.fnmatchcase(path, p) for p in plan.startup):
        return "executed by the tests as they start (never the agent's under strict mode)"
    if plan.trust in ("audited", "inferred") and not (deleted and plan.trust == "inferred"):
        # An inferred root is the reference solution's, not the task author's word: a start-up
        # hook under one (a pip install's .pth) is never what the tests need of an agent.
        if any(fnmatch.fnmatchcase(path, p) for p in STARTUP_HOOKS) or _is_code_pth(path, host_file, content):
            return "start-up hook (never carried under strict mode)"
        if plan.trust == "audited":
            return None
    if any(_glob_keeps(path, root) for root in plan.roots):
        return None
    if plan.trust == "inferred":
        return "outside the task's deliverables (workdir and the roots inferred from its reference solution)"
    return "outside the task's deliverables (workdir and [verifier] allow_changes)"


def is_startup_hook(path: str) -> bool:
    """Whether a path is a start-up hook by its name alone (any `.pth`: its content is not asked)."""
    return path.endswith(".pth") or any(fnmatch.fnmatchcase(path, p) for p in STARTUP_HOOKS)


def _is_code_pth(path: str, host_file: str | None, content: bytes | None = None) -> bool:
    # A .pth line that starts with `import` runs at every interpreter start; path lines only
    # append directories after the standard ones, so they cannot shadow anything.
    if not path.endswith(".pth"):
        return False
    if content is None:
        if host_file is None or not os.path.isfile(host_file) or os.path.islink(host_file):
            return True
        with open(host_file, "rb") as f:
            content = f.read(1 << 20)
    lines = content[:1 << 20].decode("utf-8", errors="replace").splitlines()
    return any(line.startswith(("import ", "import\t")) for line in lines)


def capture(container: str, plan: Plan, limit_bytes: int | None = None) -> Changes:
    """Read the paused agent container's changes and archive those `plan` keeps; more than
    `limit_bytes` of kept file contents (apparent sizes) raises ChangesTooLarge."""
    api = engine.api()
    info = api.inspect_container(container)
    driver = info.get("GraphDriver") or {}
    data = driver.get("Data") or {}
    upper = data.get("UpperDir")
    if driver.get("Name") != "overlay2" or not upper or not os.path.isdir(upper):
        raise CaptureUnavailable(f"container {container[:12]}'s filesystem is not readable from this host "
                                 f"(storage driver {driver.get('Name')!r})")
    lowers = [d for d in (data.get("LowerDir") or "").split(":") if d]
    volumes = volume_dirs(info)
    paused = _pause(container, info)
    try:
        changes = _archive(upper, lowers, info["Image"], plan, limit_bytes, volumes)
    finally:
        if paused:
            _unpause(container)
    changes.container = container_template(info)
    return changes


def volume_dirs(info: dict[str, Any]) -> list[tuple[str, str]]:
    """(mount point, host directory) of the container's volumes (an image's VOLUME, a compose
    volume): their contents are not in the container's layer, and are captured and judged under
    the same plan (CaptureUnavailable when one cannot be read from this host)."""
    found = []
    for m in info.get("Mounts") or []:
        if m.get("Type") != "volume":
            continue  # bind mounts are the engine's or the harness's (the verifier's own, logs)
        source, dest = m.get("Source") or "", (m.get("Destination") or "").rstrip("/")
        if not dest or _under(dest, NEVER_CARRIED):
            continue
        if not os.path.isdir(source):
            raise CaptureUnavailable(f"the container's volume at {dest} is not readable from this host")
        found.append((dest, source))
    return found


def container_template(info: dict[str, Any]) -> dict[str, Any]:
    """The part of an inspect_container result a verification container is made from."""
    config, host = info.get("Config") or {}, info.get("HostConfig") or {}
    return {"Config": {k: config.get(k) for k in ("Env", "WorkingDir", "Labels")},
            "HostConfig": {k: host.get(k) for k in ("NanoCpus", "Memory", "MemorySwap", "PidsLimit",
                                                    "DeviceRequests", "NetworkMode")}}


def _pause(container: str, info: dict[str, Any]) -> bool:
    state = info.get("State") or {}
    if not state.get("Running") or state.get("Paused"):
        return False
    try:
        engine.api().pause(container)
        return True
    except (APIError, NotFound):
        return False


def _unpause(container: str) -> None:
    try:
        engine.api().unpause(container)
    except (APIError, NotFound):
        pass


@dataclass
class _Walk:
    upper: str
    lowers: list[str]
    plan: Plan
    tar: tarfile.TarFile
    changes: dict[str, list[str]]
    limit_bytes: int | None = None
    carried_bytes: int = 0
    _gone: list[str] = field(default_factory=list)
    """Deleted volume paths recorded so far (what lies below them is gone with them)."""

    def in_lower(self, rel: str) -> bool:
        return any(os.path.lexists(os.path.join(d, rel)) for d in self.lowers)

    def visit(self, top: str) -> None:
        # Depth-first with a stack of its own: an agent's directory chain can be deeper than
        # Python's recursion limit (a deep cache is honest work, not a reason to lose a verdict).
        pending = [top]
        while pending:
            pending.extend(reversed(self._visit_one(pending.pop())))

    def _visit_one(self, rel_dir: str) -> list[str]:
        """Judge one directory's entries; its subdirectories to visit, in order."""
        subdirs: list[str] = []
        try:
            entries = sorted(os.scandir(os.path.join(self.upper, rel_dir)), key=lambda e: e.name)
        except OSError:
            return subdirs
        for entry in entries:
            rel = os.path.join(rel_dir, entry.name)
            path = "/" + rel
            st = entry.stat(follow_symlinks=False)
            if path in ENGINE_MANAGED:
                continue
            existed = self.in_lower(rel)
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # overlay whiteout: deleted
                if self.plan.workdir and _under(self.plan.workdir, [path]):
                    self.changes["dropped"].append(f"{path}: deleted, but the task's workdir is never deleted "
                                                   "by a deliverable (the tests start there)")
                    continue
                self._judge(path, deleted=True, existed=True)
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            opaque = is_dir and existed and _is_opaque(entry.path)
            if opaque:
                # Deleted and recreated: what the image had below it is gone.
                self._judge(path, deleted=True, existed=True)
            if is_dir:
                # A directory that only holds changes is their parent, not a change of its own,
                # unless the agent created it (or replaced it).
                if not existed or opaque:
                    self._judge(path, entry_path=entry.path, existed=False)
                elif self._metadata_changed(rel, st):
                    self._judge(path, entry_path=entry.path, existed=True)
                subdirs.append(rel)
                continue
            if stat.S_ISSOCK(st.st_mode):
                self.changes["dropped"].append(f"{path}: a socket (not a file a checker can use)")
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                # A device node or a fifo is never a deliverable, and a regrade refuses an
                # archive that carries one (rsr.verify.rebuild).
                self.changes["dropped"].append(f"{path}: a special file (not a deliverable)")
                continue
            self._judge(path, entry_path=entry.path, existed=existed)
        return subdirs

    def _metadata_changed(self, rel: str, st: os.stat_result) -> bool:
        for d in self.lowers:
            candidate = os.path.join(d, rel)
            if os.path.lexists(candidate):
                old = os.lstat(candidate)
                return (old.st_mode, old.st_uid, old.st_gid) != (st.st_mode, st.st_uid, st.st_gid)
        return True

    def _judge(self, path: str, *, deleted: bool = False, entry_path: str | None = None, existed: bool) -> None:
        why = why_dropped(path, self.plan, entry_path, deleted=deleted)
        if why is not None:
            # A dropped directory is listed through what it holds; an empty one says nothing.
            if deleted or entry_path is None or not os.path.isdir(entry_path) or os.path.islink(entry_path):
                self.changes["dropped"].append(f"{path}: {'deleted, ' if deleted else ''}{why}")
            return
        if deleted:
            self.changes["deleted"].append(path)
            return
        assert entry_path is not None
        info = self.tar.gettarinfo(entry_path, arcname=path.lstrip("/"))
        if info is None:  # a socket or another type tar cannot hold
            self.changes["dropped"].append(f"{path}: not archivable")
            return
        self.changes["kept"].append(path)
        if not existed:
            self.changes["added"].append(path)
        if info.isdir():
            self.changes["directories"].append(path)
        if info.isreg():
            self.carried_bytes += info.size
            if self.limit_bytes is not None and self.carried_bytes > self.limit_bytes:
                raise ChangesTooLarge(f"the agent's kept files add up to more than {self.limit_bytes // 2**20} MB "
                                      f"(apparent size, at {path}): above the task's storage limit")
            # Never follow a link here: the path is the upper directory's, read on the host.
            fd = os.open(entry_path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as f:
                self.tar.addfile(info, f)
            if _is_plugin_registration(path, entry_path):
                self.changes["plugins"].append(f"{path}: registers a pytest plugin (pytest imports it by itself)")
        else:
            self.tar.addfile(info)


    def visit_volume(self, dest: str, source: str) -> None:
        """A volume's contents, judged as the upper directory's are: a volume holds every file
        (the image's copied in at creation), so a change is what differs from the image's
        layers, and a deletion is an image file the volume no longer has."""
        base = dest.strip("/")
        present: set[str] = set()
        pending = [""]
        while pending:
            sub = pending.pop()
            try:
                entries = sorted(os.scandir(os.path.join(source, sub)), key=lambda e: e.name)
            except OSError:
                continue
            for entry in reversed(entries):
                rel = os.path.join(base, sub, entry.name)
                path, st = "/" + rel, entry.stat(follow_symlinks=False)
                present.add(rel)
                lower = self._lower(rel)
                if stat.S_ISDIR(st.st_mode):
                    if lower is None or not stat.S_ISDIR(os.lstat(lower).st_mode):
                        self._judge(path, entry_path=entry.path, existed=lower is not None)
                    elif self._metadata_changed(rel, st):
                        self._judge(path, entry_path=entry.path, existed=True)
                    pending.append(os.path.join(sub, entry.name))
                elif not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    self.changes["dropped"].append(f"{path}: a special file (not a deliverable)")
                elif lower is None or not _same_file(lower, entry.path):
                    self._judge(path, entry_path=entry.path, existed=lower is not None)
        for rel in self._image_entries(base):
            if rel not in present and not any(rel.startswith(d + "/") for d in self._gone):
                self._gone.append(rel)
                self._judge("/" + rel, deleted=True, existed=True)

    def _lower(self, rel: str) -> str | None:
        for d in self.lowers:
            candidate = os.path.join(d, rel)
            if os.path.lexists(candidate):
                st = os.lstat(candidate)
                return None if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0 else candidate
        return None

    def _image_entries(self, base: str) -> list[str]:
        """Every path the image has under `base` (its layers merged, whiteouts honoured), parents
        before children."""
        found: list[str] = []
        pending = [base]
        while pending:
            rel = pending.pop()
            names: set[str] = set()
            for d in self.lowers:
                try:
                    names.update(os.listdir(os.path.join(d, rel)))
                except OSError:
                    continue
            for name in sorted(names, reverse=True):
                child = os.path.join(rel, name)
                lower = self._lower(child)
                if lower is None:
                    continue
                found.append(child)
                if stat.S_ISDIR(os.lstat(lower).st_mode):
                    pending.append(child)
        return found


def _same_file(a: str, b: str) -> bool:
    """Whether the volume's file is the image's, unchanged (type, owner, mode, content)."""
    sa, sb = os.lstat(a), os.lstat(b)
    if (sa.st_mode, sa.st_uid, sa.st_gid) != (sb.st_mode, sb.st_uid, sb.st_gid):
        return False
    if stat.S_ISLNK(sa.st_mode):
        return os.readlink(a) == os.readlink(b)
    return sa.st_size == sb.st_size and filecmp.cmp(a, b, shallow=False)


def _is_plugin_registration(path: str, host_file: str) -> bool:
    if not _is_entry_points(path):
        return False
    with open(host_file, "rb") as f:
        return plugin_registration(path, f.read(1 << 20))


def _is_entry_points(path: str) -> bool:
    parent = PurePosixPath(path).parent.name
    # importlib.metadata finds distributions whatever the case of the suffix (`.DIST-INFO`).
    return (PurePosixPath(path).name.lower() == "entry_points.txt"
            and parent.lower().endswith((".dist-info", ".egg-info")))


def plugin_registration(path: str, content: bytes) -> bool:
    """Whether a kept file is package metadata registering a pytest plugin."""
    if not _is_entry_points(path):
        return False
    text = content[:1 << 20].decode("utf-8", errors="replace")
    return any(line.strip().replace(" ", "") == "[pytest11]" for line in text.splitlines())


def _is_opaque(path: str) -> bool:
    try:
        return os.getxattr(path, "trusted.overlay.opaque") == b"y"
    except OSError:
        return False


def _archive(upper: str, lowers: list[str], image: str, plan: Plan, limit_bytes: int | None = None,
             volumes: list[tuple[str, str]] | None = None) -> Changes:
    fd, archive_path = tempfile.mkstemp(prefix="changes-", suffix=".tar", dir=cache_dir("verify"))
    os.close(fd)
    changes: dict[str, list[str]] = {"kept": [], "added": [], "deleted": [], "dropped": [], "directories": [],
                                     "plugins": []}
    try:
        with tarfile.open(archive_path, mode="w", format=tarfile.PAX_FORMAT) as tar:
            walk = _Walk(upper, lowers, plan, tar, changes, limit_bytes)
            walk.visit("")
            for dest, source in volumes or []:
                walk.visit_volume(dest, source)
        digest = hashlib.sha256()
        with open(archive_path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except BaseException:
        Path(archive_path).unlink(missing_ok=True)
        raise
    return Changes(image=image, plan=plan, archive_path=archive_path, archive_sha256=digest.hexdigest(),
                   archive_bytes=os.path.getsize(archive_path), **changes)


def apply(container: str, changes: Changes) -> None:
    """Put `changes` into a fresh (pristine) container: deletions first, by the image's own
    /bin/rm before any agent file is there, then the archive through the engine."""
    if changes.deleted:
        outcome = engine.run_exec(container, ["/bin/rm", "-rf", "--", *changes.deleted], user="root", timeout=120)
        if outcome.returncode != 0:
            raise RuntimeError(f"could not apply the agent's deletions: {outcome.stderr[:300]!r}")
    if changes.kept:
        with open(changes.archive_path, "rb") as f:
            if not engine.api().put_archive(container, "/", f):
                raise PermissionError(f"the engine refused the agent's changes for container {container[:12]}")
