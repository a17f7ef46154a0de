"""rsr_check: run a deliverable the checker does not trust (standard library only).

Copy this file verbatim into a task's tests/ (rsr's own tasks are tested to hold an identical
copy of rsr/tasks/kit/rsr_check.py). A checker starts with

    import sys; sys.path.insert(0, "/tests")   # python3 -I keeps the script's dir off sys.path
    import rsr_check as rc
    rc.lockdown()

and then runs the agent's program through `rc.run` / `rc.start` (as the unprivileged user
nobody, with a clean environment, a timeout and captured output), calls agent library code
through `rc.call_python` (a subprocess as nobody that returns JSON; agent code never enters
the checker's process), reads what the deliverable wrote through `rc.read_text` (as nobody, so a
symlink cannot make the checker read its own secrets), and inspects agent-written repositories
through `rc.git` (no system/global config, hooks, fsmonitor, pager, external diff, or the
filter, textconv and merge drivers a repository's own config names).

`lockdown()` makes /tests and /logs/verifier root-only (0700) before anything of the agent's
runs, makes the checker's process non-dumpable (its /proc entries and memory are closed even to
a root deliverable without CAP_SYS_PTRACE) and sets umask 077, so whatever the checker writes
(expected outputs included) is root-only unless it hands it over with `hand_over`/`put`.

Reduced mode, `run(..., root=True)`: for deliverables that genuinely need root (adding users,
dpkg). The program still gets a clean environment, no-new-privileges, a timeout, its own
session and a smaller capability bounding set (so it cannot read the checker's memory or
environment), and every process it leaves is killed before the checker judges (every process
started after lockdown that is not the checker's: what ran before it, the container's init and
a runner's keep-alive such as Harbor's `sh -c "sleep infinity"`, is the runner's, and killing
it would end the container). What it cannot
protect: a root deliverable can read /tests (the checker's code and data), can write
/logs/verifier while it runs (the checker removes the reward files before writing its own) and
can change system files that the checker uses afterwards; checkers in this mode should import
everything first and inspect results by reading files rather than by running system tools.

Leak probe (`rsr tasks check`): with RSR_LEAK_PROBE=1 in the checker's environment, a probe
runs as the deliverable's user at lockdown and before the 1st, 2nd, 4th, 8th... deliverable
run, and looks for what it must not reach: files under /tests and /logs/verifier, files the
checker wrote during verification outside the directories it handed over, the checker's
/proc entries (environ, fd, mem, maps). Its findings go to stderr at exit as one line
starting with PROBE_MARKER.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TESTS = "/tests"
LOGS = "/logs/verifier"
RUN_UID = 65534  # nobody
RUN_GID = 65534  # nogroup
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PROBE_ENV = "RSR_LEAK_PROBE"
PROBE_MARKER = "RSR-LEAK-PROBE "
# Capabilities a root deliverable keeps in reduced mode (user provisioning, dpkg, chown'd
# trees). Dropping the rest makes the checker's capability set no subset of the deliverable's,
# which closes the checker's /proc entries to it even where dumpability would not.
ROOT_CAPS = ("chown", "dac_override", "fowner", "fsetid", "setuid", "setgid", "kill", "net_bind_service")
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38

_session: dict = {"locked": False, "runs": 0, "root_runs": 0, "given": [], "probe": None, "home": None,
                  "before": set()}


class AgentRaised(Exception):
    """Agent code called through `call_python` raised; `types` lists its exception's class
    names along the MRO (so `"ValueError" in e.types` tests for a subclass too)."""

    def __init__(self, types: list[str], message: str):
        super().__init__(f"{types[0] if types else 'Exception'}: {message}")
        self.types = types
        self.message = message


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def lockdown() -> None:
    """Close /tests and /logs/verifier to everyone but root; call before running anything."""
    if _session["locked"]:
        return
    os.umask(0o077)
    if os.geteuid() == 0:
        for path in (TESTS, LOGS):
            os.makedirs(path, exist_ok=True)
            try:
                os.chown(path, 0, 0)
                os.chmod(path, 0o700)
            except OSError:
                # A read-only mount the verifier already made root-only: the probe tells.
                pass
        try:
            _libc().prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    _session["locked"] = True
    _session["started"] = time.time()
    _session["before"] = {(pid, _start_of(pid)) for pid in _pids()}
    atexit.register(_at_exit)
    if os.environ.get(PROBE_ENV) == "1":
        _session["probe"] = {"user": "nobody", "mode": "unprivileged", "probes": 0, "findings": [], "notes": []}
        _session["workdir_before"] = _listing(os.environ.get("RSR_WORKDIR", "/app"))
        _probe(root=False)


def _listing(top: str, limit: int = 50000) -> dict | None:
    """path -> (mtime_ns, inode, size) of the files under `top` (the agent's workdir as the
    checker found it); None when there are too many to pass to the probe."""
    out: dict = {}
    for root_, _dirs, files in os.walk(top):
        for name in files:
            p = os.path.join(root_, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[p] = [st.st_mtime_ns, st.st_ino, st.st_size]
            if len(out) > limit:
                return None
    return out


def _at_exit() -> None:
    sweep()
    report = _session.get("probe")
    if report is not None:
        report["findings"] = sorted(set(report["findings"]))[:200]
        report["notes"] = sorted(set(report["notes"]))[:50]
        if _session["root_runs"]:
            report["mode"] = "root"
        sys.stderr.write("\n" + PROBE_MARKER + json.dumps(report, sort_keys=True) + "\n")
        sys.stderr.flush()


def _home() -> str:
    if _session["home"] is None:
        _session["home"] = scratch("home-")
    return _session["home"]


def clean_env(extra: dict | None = None) -> dict:
    env = {"PATH": CLEAN_PATH, "HOME": _home(), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp",
           "USER": "nobody", "LOGNAME": "nobody", "SHELL": "/bin/sh"}
    env.update(extra or {})
    return env


def _setpriv() -> str | None:
    for path in ("/usr/bin/setpriv", "/bin/setpriv"):
        if os.access(path, os.X_OK):
            return path
    return None


def _no_new_privs() -> None:
    _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _argv(cmd: list[str], root: bool) -> tuple[list[str], dict]:
    """The command wrapped to drop privileges, and extra Popen arguments."""
    if os.geteuid() != 0:
        return list(cmd), {"preexec_fn": _no_new_privs}  # already unprivileged
    sp = _setpriv()
    if root:
        if sp:
            caps = ",".join(f"+{c}" for c in ROOT_CAPS)
            return [sp, "--no-new-privs", "--inh-caps=-all", f"--bounding-set=-all,{caps}", "--", *cmd], {}
        return list(cmd), {"preexec_fn": _no_new_privs}
    if sp:
        return [sp, f"--reuid={RUN_UID}", f"--regid={RUN_GID}", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all", "--", *cmd], {}
    return list(cmd), {"user": RUN_UID, "group": RUN_GID, "extra_groups": [], "preexec_fn": _no_new_privs}


def _spawn(cmd: list[str], *, root: bool, cwd: str | None, env: dict | None, stdin, stdout, stderr):
    if not _session["locked"]:
        lockdown()
    _session["runs"] += 1
    if root:
        _session["root_runs"] += 1
    n = _session["runs"]
    if _session["probe"] is not None and n & (n - 1) == 0:
        _probe(root=root)
    argv, extra = _argv([str(c) for c in cmd], root)
    # umask 022 as in the agent's shell, not the checker's 077.
    return subprocess.Popen(argv, cwd=cwd, env=clean_env(env), stdin=stdin, stdout=stdout, stderr=stderr,
                            start_new_session=True, close_fds=True, umask=0o022, **extra)


def _killpg(p: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        os.killpg(p.pid, signal.SIGKILL)


def run(cmd: list[str], *, input: str | bytes | None = None, timeout: float = 60, cwd: str | None = None,
        env: dict | None = None, text: bool = True, root: bool = False, keep_children: bool = False,
        check: bool = False) -> subprocess.CompletedProcess:
    """Run the deliverable as nobody (root=True: reduced mode, see the module docstring).

    Like subprocess.run(capture_output=True): returns a CompletedProcess, raises
    subprocess.TimeoutExpired after `timeout` seconds (its process group killed first).
    Output goes through unlinked files, not pipes, so a daemon that inherits them cannot
    block the checker. Whatever the program left in its process group is killed on return,
    unless `keep_children` (a control script starting a service)."""
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        if input is not None:
            fin.write(input.encode() if isinstance(input, str) else input)
            fin.seek(0)
        p = _spawn(cmd, root=root, cwd=cwd, env=env, stdin=fin if input is not None else subprocess.DEVNULL,
                   stdout=fout, stderr=ferr)
        timed_out = False
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _killpg(p)
            p.wait()
        if not keep_children:
            _killpg(p)
            if root:
                sweep()
        outputs = []
        for f in (fout, ferr):
            f.seek(0)
            data = f.read()
            outputs.append(data.decode("utf-8", errors="replace") if text else data)
    if timed_out:
        raise subprocess.TimeoutExpired(cmd, timeout, output=outputs[0], stderr=outputs[1])
    done = subprocess.CompletedProcess(cmd, p.returncode, outputs[0], outputs[1])
    if check:
        done.check_returncode()
    return done


def start(cmd: list[str], *, cwd: str | None = None, env: dict | None = None, root: bool = False,
          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
          text: bool | None = None) -> subprocess.Popen:
    """Start the deliverable as nobody in its own session (a server the checker then queries);
    `stop` it, or `sweep` at the end. stdin/stdout/stderr as in Popen."""
    p = _spawn(cmd, root=root, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr)
    if text:
        for name in ("stdin", "stdout", "stderr"):
            stream = getattr(p, name)
            if stream is not None:
                import io

                setattr(p, name, io.TextIOWrapper(stream, encoding="utf-8", errors="replace",
                                                  write_through=name == "stdin"))
    return p


def stop(p: subprocess.Popen, timeout: float = 5) -> None:
    """Kill a started program's whole process group and reap it."""
    _killpg(p)
    with contextlib.suppress(Exception):
        p.wait(timeout=timeout)


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _uid_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _start_of(pid: int) -> int | None:
    """The process's start time in clock ticks: with the pid, an identity a recycled pid cannot
    forge."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _ancestors() -> set[int]:
    keep, pid = {1}, os.getpid()
    while pid > 1:
        keep.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return keep


def sweep() -> None:
    """Kill every process of the deliverable's user (and, after a reduced-mode run, every
    process started since lockdown that is not the checker or its ancestors), repeating until
    none is left."""
    if os.geteuid() != 0:
        return
    keep = _ancestors()
    before = _session["before"]

    def left_by_deliverable(p: int) -> bool:
        uid = _uid_of(p)
        if uid == RUN_UID:
            return True
        return bool(_session["root_runs"]) and uid is not None and (p, _start_of(p)) not in before

    for _ in range(50):
        victims = [p for p in _pids() if p not in keep and left_by_deliverable(p)]
        if not victims:
            return
        for pid in victims:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def scratch(prefix: str = "run-") -> str:
    """A fresh directory under /tmp that belongs to the deliverable's user."""
    if not _session["locked"]:
        lockdown()
    d = tempfile.mkdtemp(prefix=f"rsr-{prefix}", dir="/tmp")
    if os.geteuid() == 0:
        os.chown(d, RUN_UID, RUN_GID)
    _session["given"].append(d)
    return d


def hand_over(path: str) -> str:
    """Give `path` (recursively; symlinks and multiply-linked files untouched) to the
    deliverable's user: its inputs, or a tree it must write into."""
    if os.geteuid() != 0:
        return path

    def give(p: str) -> None:
        st = os.lstat(p)
        import stat as st_mod

        if st_mod.S_ISLNK(st.st_mode) or (st_mod.S_ISREG(st.st_mode) and st.st_nlink > 1):
            return
        os.lchown(p, RUN_UID, RUN_GID)

    give(path)
    if os.path.isdir(path) and not os.path.islink(path):
        for root_, dirs, files in os.walk(path):
            for name in dirs + files:
                give(os.path.join(root_, name))
    if path not in _session["given"]:
        _session["given"].append(path)
    return path


def expose(path: str) -> str:
    """Make `path` (recursively) readable, and its directories searchable, by the deliverable's
    user without changing ownership: the agent's workdir, which root wrote with any umask."""
    import stat as st_mod

    def widen(p: str) -> None:
        st = os.lstat(p)
        if st_mod.S_ISDIR(st.st_mode):
            os.chmod(p, st.st_mode & 0o7777 | 0o555)
        elif st_mod.S_ISREG(st.st_mode) and st.st_nlink == 1:
            extra = 0o444 | (0o111 if st.st_mode & 0o100 else 0)
            os.chmod(p, st.st_mode & 0o7777 | extra)

    if os.geteuid() != 0 or not os.path.exists(path):
        return path
    widen(path)
    if os.path.isdir(path) and not os.path.islink(path):
        for root_, dirs, files in os.walk(path):
            for name in dirs + files:
                widen(os.path.join(root_, name))
    return path


def put(path: str, data: str | bytes, mode: int = 0o644) -> str:
    """Write an input file for the deliverable (owned by its user)."""
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    os.chmod(path, mode)
    return hand_over(path)


@contextlib.contextmanager
def as_user():
    """Within the block the checker's file accesses carry the deliverable's rights (effective
    uid/gid nobody), so a symlink the deliverable planted cannot make root read a secret."""
    if os.geteuid() != 0:
        yield
        return
    groups = os.getgroups()
    os.setgroups([])
    os.setegid(RUN_GID)
    os.seteuid(RUN_UID)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(groups)


def read_bytes(path: str) -> bytes:
    with as_user(), open(path, "rb") as f:
        return f.read()


def read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8", errors="replace")


GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
           "GIT_ATTR_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "PAGER": "cat",
           "GIT_EDITOR": "true", "GIT_ASKPASS": "/bin/false", "GIT_SSH_COMMAND": "/bin/false"}
GIT_OVERRIDES = ("core.hooksPath=/dev/null", "core.fsmonitor=false", "core.pager=cat", "diff.external=",
                 "core.alternateRefsCommand=", "core.sshCommand=/bin/false", "credential.helper=",
                 "protocol.ext.allow=never", "safe.directory=*", "gc.auto=0", "maintenance.auto=false",
                 "core.attributesFile=/dev/null", "log.showSignature=false", "commit.gpgSign=false",
                 "tag.gpgSign=false", "core.untrackedCache=false")


# Repository config keys that name commands git would run (filters on status/checkout/add,
# textconv and external diffs on diff/log -p, merge drivers).
_DRIVER_KEYS = r"^(filter|diff|merge)\..*\.(clean|smudge|process|textconv|command|driver)$"


def git(args: list[str], *, repo: str | None = None, cwd: str | None = None, input: str | bytes | None = None,
        text: bool = True, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess:
    """git for the checker (as root), on `repo` (git -C) or in `cwd`: no system or global config,
    hooks, fsmonitor, pager, external diff, credential helpers or ssh, and every filter, textconv
    and merge driver the repository's own config names is blanked, so an agent-written repository
    runs nothing. Prefer plumbing (rev-parse, rev-list, cat-file, ls-tree) all the same."""
    env = {"PATH": CLEAN_PATH, "HOME": "/nonexistent", "LANG": "C.UTF-8", **GIT_ENV}
    argv = ["git", "--no-pager"] + (["-C", repo] if repo else [])
    for o in GIT_OVERRIDES:
        argv += ["-c", o]
    drivers = subprocess.run(argv + ["config", "--get-regexp", _DRIVER_KEYS], cwd=cwd, capture_output=True,
                             text=True, timeout=timeout, env=env)
    for line in drivers.stdout.splitlines():
        key = line.split(" ", 1)[0]
        if key:
            argv += ["-c", f"{key}="]
    return subprocess.run(argv + list(args), cwd=cwd, input=input, capture_output=True, text=text,
                          timeout=timeout, env=env, check=check)


_BOOT = r"""
import json, os, sys
req = json.loads(sys.stdin.read())
out = os.dup(1)
os.dup2(2, 1)
sys.path[:0] = req["paths"]
ns = {"args": req["args"], "result": None}
try:
    exec(compile(req["code"], "<rsr_check.call_python>", "exec"), ns)
    reply = {"ok": True, "result": ns["result"]}
except BaseException as e:
    reply = {"ok": False, "types": [c.__name__ for c in type(e).__mro__], "message": str(e)[:2000]}
sys.stdout.flush()
try:
    data = json.dumps(reply, default=repr)
except (TypeError, ValueError) as e:
    data = json.dumps({"ok": False, "types": ["TypeError"], "message": "result not JSON: " + str(e)})
os.write(out, data.encode())
os._exit(0)
"""


def call_python(code: str, args=None, *, paths: list[str] | None = None, timeout: float = 60, cwd: str | None = None,
                env: dict | None = None):
    """Run `code` in a fresh `python3 -I` as nobody with `paths` (default: the workdir /app)
    first on sys.path and `args` (JSON) bound; return the JSON value it assigns to `result`.
    Raises AgentRaised when the code raised, RuntimeError when it produced no reply."""
    req = json.dumps({"paths": paths if paths is not None else ["/app"], "code": code, "args": args})
    p = run(["python3", "-I", "-c", _BOOT], input=req, timeout=timeout, cwd=cwd or "/", env=env)
    try:
        reply = json.loads(p.stdout)
    except ValueError:
        raise RuntimeError(f"agent code gave no reply (exit {p.returncode}): {p.stderr[-500:]}") from None
    if not reply.get("ok"):
        raise AgentRaised(reply.get("types") or ["Exception"], reply.get("message", ""))
    return reply.get("result")


def write_reward(reward: float, milestones: dict | None = None) -> None:
    """Kill what the deliverable left, then write reward.json (with milestones) or reward.txt."""
    sweep()
    os.makedirs(LOGS, exist_ok=True)
    for name in ("reward.txt", "reward.json"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(LOGS, name))
    if milestones is None:
        with open(os.path.join(LOGS, "reward.txt"), "w") as f:
            f.write(f"{reward}\n")
    else:
        with open(os.path.join(LOGS, "reward.json"), "w") as f:
            json.dump({"reward": reward, **milestones}, f)


def cleanup(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


# The probe runs as the deliverable's user; it gets the checker's pids and the verification
# start time, and prints its findings as JSON.
_PROBE = r"""
import json, os, sys
req = json.loads(sys.stdin.read())
found, notes = [], []
me = os.getpid()

def can_read(p):
    try:
        with open(p, "rb") as f:
            f.read(1)
        return True
    except OSError:
        return False

for top in (req["tests"], req["logs"]):
    try:
        names = os.listdir(top)
        found.append("listable: " + top)
    except OSError:
        names = None
    for root, dirs, files in os.walk(top):
        for n in files:
            p = os.path.join(root, n)
            if can_read(p):
                found.append("readable: " + p)
    try:
        fd = os.open(os.path.join(top, ".rsr-probe"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        os.unlink(os.path.join(top, ".rsr-probe"))
        found.append("writable: " + top)
    except OSError:
        pass
given = [g.rstrip("/") + "/" for g in req["given"]]
before = req["workdir_before"]
for top in req["scan"]:
    in_workdir = top == req["workdir"]
    if in_workdir and before is None:
        notes.append("workdir too large to compare: not scanned")
        continue
    for root, dirs, files in os.walk(top):
        if any((root + "/").startswith(g) for g in given):
            dirs[:] = []
            continue
        for n in files:
            p = os.path.join(root, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if in_workdir:
                # The agent's files carry any mtime: what counts is what changed after lockdown.
                new = before.get(p) != [st.st_mtime_ns, st.st_ino, st.st_size]
            else:
                new = st.st_mtime >= req["since"]
            if st.st_uid == 0 and new and os.path.isfile(p) and not os.path.islink(p) and can_read(p):
                found.append("checker-written file readable: " + p)
for pid in req["pids"]:
    for entry in ("environ", "maps", "mem", "fd"):
        p = "/proc/%d/%s" % (pid, entry)
        try:
            if entry == "fd":
                # Listing needs only directory access (root has it); following an entry needs
                # ptrace access to the checker.
                for n in os.listdir(p):
                    os.readlink(p + "/" + n)
                    break
                else:
                    continue
            else:
                with open(p, "rb") as f:
                    if entry == "mem":
                        f.seek(0x400000)
                    f.read(1)
            found.append("checker process readable: " + p)
        except (OSError, ValueError):
            pass
for d in os.listdir("/proc"):
    if not d.isdigit() or int(d) == me:
        continue
    try:
        with open("/proc/%s/cmdline" % d, "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        continue
    long = [a for a in args if len(a) > 512]
    if long:
        notes.append("long argument on a command line readable by the deliverable: pid %s %r" % (d, long[0][:80]))
print(json.dumps({"findings": found, "notes": notes}))
"""


def _probe(root: bool) -> None:
    report = _session["probe"]
    since = _session.get("started", time.time())
    try:
        with open("/proc/stat") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith("btime"))
        tick = os.sysconf("SC_CLK_TCK")
        for pid in _ancestors() - {1}:
            with open(f"/proc/{pid}/stat") as f:
                start = int(f.read().rsplit(")", 1)[1].split()[19]) / tick + btime
            since = min(since, start)
    except (OSError, ValueError, StopIteration, IndexError):
        pass
    workdir = os.environ.get("RSR_WORKDIR", "/app")
    req = {"tests": TESTS, "logs": LOGS, "given": list(_session["given"]), "since": since - 1,
           "workdir": workdir, "workdir_before": _session.get("workdir_before"),
           "scan": [d for d in ("/tmp", "/var/tmp", "/dev/shm", "/run", workdir, "/logs", "/root") if os.path.isdir(d)],
           "pids": sorted(_ancestors() - {1})}
    argv, extra = _argv(["python3", "-I", "-c", _PROBE], root)
    try:
        p = subprocess.run(argv, input=json.dumps(req), capture_output=True, text=True, timeout=60,
                           env={"PATH": CLEAN_PATH, "LANG": "C.UTF-8"}, cwd="/", **extra)
        got = json.loads(p.stdout)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        report["notes"].append(f"probe failed: {type(e).__name__}: {e}")
        return
    report["probes"] += 1
    report["findings"].extend(got["findings"])
    report["notes"].extend(got["notes"])
