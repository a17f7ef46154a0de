"""Registry of task suites: where each comes from, what it is pinned to, where its copy lives.

Two kinds of public source:
- a git commit (TB2: the commit Harbor's legacy registry lists), checked out with git;
- a Harbor hub dataset `org/name@ref` (TB2.1, TB3, TB4, LHTB), fetched by the installed `harbor`
  CLI (`harbor download`), never by a client of our own. Tests and the rehearsal point it at a
  stand-in: a git repository laid out as a Harbor git-repo registry (`--repo`).

A suite is pinned by its source's ref and, where known, by the digest of its task set
(`rsr.tasks.load.tasks_digest`). `rsr tasks fetch SUITE` records in the copy (`PIN_RECORD`) the
tool, source, ref, each task's digest and the set's; an eval then refuses a copy whose digest
differs from the pin (or from that record) unless the run says `-T unpinned=true`, which the log
then carries. Where the digests of a hub dataset are not known here (no hub access when this
registry was written), the first fetch records them and a later fetch of the same ref must match.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rsr.bundled import bundled
from rsr.errors import RsrError

REPO_ROOT = Path(__file__).resolve().parents[2]


class SuiteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    n_tasks: int | None = None
    git_url: str | None = None
    git_commit: str | None = None
    digest: str | None = None
    """`tasks_digest` of the pinned task set, where known."""
    harbor_ref: str | None = None
    """The suite's name in Harbor's legacy registry (`harbor run -d NAME@VERSION`)."""
    hub: str | None = None
    """Harbor hub dataset `org/name`, fetched with `harbor download org/name@hub_ref`."""
    hub_ref: str | None = None
    """The version ref the fetch asks for; a pin only if it names a fixed version."""
    subdir: str | None = None
    local: str | None = None
    """Path relative to the repository (our own suites ship with the code)."""
    note: str = ""


_FIRST_FETCH = ("No task digest is known here (this registry was written without hub access): the "
                "first `rsr tasks fetch` records each task's digest and the set's, and a later fetch "
                "of the same ref must give the same digests.")

SUITES: dict[str, SuiteSpec] = {s.name: s for s in (
    SuiteSpec(name="core", title="rsr core (offline, ours)", local="tasks/core",
              note="Ships with rsr (tasks/core)."),
    SuiteSpec(name="tb2", title="Terminal-Bench 2.0", n_tasks=89,
              git_url="https://github.com/laude-institute/terminal-bench-2.git",
              # The commit Harbor's registry lists for every task of terminal-bench@2.0.
              git_commit="69671fbaac6d67a7ef0dfec016cc38a64ef7a77c",
              harbor_ref="terminal-bench@2.0",
              note="GitHub laude-institute/terminal-bench-2 at the commit Harbor's registry lists "
                   "for terminal-bench@2.0 (git checkout)."),
    SuiteSpec(name="tb2_1", title="Terminal-Bench 2.1", n_tasks=89,
              hub="terminal-bench/terminal-bench-2-1", hub_ref="latest",
              note="Harbor hub dataset terminal-bench/terminal-bench-2-1 (TB2 with 28 of its 89 "
                   "tasks fixed), fetched with `harbor download`. No fixed version ref of it is "
                   "known here, so the ref is `latest`: " + _FIRST_FETCH),
    SuiteSpec(name="tb3", title="Terminal-Bench 3 (Frontier-Bench)", n_tasks=74,
              hub="frontier-bench/frontier-bench", hub_ref="latest",
              note="Harbor hub dataset frontier-bench/frontier-bench (74 tasks, 4 need a GPU), "
                   "fetched with `harbor download`. No fixed version ref of it is known here, so "
                   "the ref is `latest`: " + _FIRST_FETCH),
    SuiteSpec(name="tb4", title="Terminal-Bench 4", n_tasks=66,
              hub="terminal-bench/terminal-bench", hub_ref="4.0.0",
              note="Harbor hub dataset terminal-bench/terminal-bench@4.0.0, fetched with "
                   "`harbor download`. " + _FIRST_FETCH),
    SuiteSpec(name="tbh", title="Terminal-Bench Hard (self-built)", n_tasks=100,
              note="Self-built by the paper's authors; not public."),
    SuiteSpec(name="swr100", title="Software Terminal 100 (self-built)", n_tasks=100,
              note="Self-built by the paper's authors; not public."),
    SuiteSpec(name="lhtb", title="Long-Horizon Terminal Bench", n_tasks=46,
              hub="IntelligenceLab/Long-Horizon-Terminal-Bench", hub_ref="latest",
              note="Published as IntelligenceLab/Long-Horizon-Terminal-Bench, fetched as a Harbor "
                   "hub dataset with `harbor download`; scored by process reward. Whether it is "
                   "on the hub under exactly that name or only a GitHub repository could not be "
                   "checked here; for the latter, `--source IntelligenceLab/Long-Horizon-Terminal-"
                   "Bench` reads it as a Harbor git-repo registry, which works if its registry.json "
                   "lists the dataset Long-Horizon-Terminal-Bench@latest. The ref is `latest`: "
                   + _FIRST_FETCH),
)}


def tasks_home() -> Path:
    return Path(os.environ.get("RSR_TASKS_HOME") or Path.home() / ".cache" / "rsr" / "tasks")


def how_to_fetch(suite: str) -> str:
    """One sentence: where the suite comes from and the command that puts it on this machine."""
    spec = SUITES[suite]
    if spec.hub:
        return (f"`rsr tasks fetch {suite}` downloads the Harbor hub dataset {spec.hub}@{spec.hub_ref} "
                "with `harbor download` (needs the network and Harbor 0.26)")
    if spec.git_url and spec.git_commit:
        return f"`rsr tasks fetch {suite}` checks out {spec.git_url}@{spec.git_commit[:12]}"
    return "no public source" + (f": {spec.note}" if spec.note else "")


def resolve_suite_path(suite: str, path: str | None = None) -> Path:
    """The local directory holding a suite's tasks: `path`; for a bundled suite (core) the working
    directory's `tasks/core`, else the copy shipped with rsr; else the cache (filled by `rsr tasks
    fetch`). Raises a clear error saying how to provide it."""
    spec = SUITES.get(suite)
    if spec is None:
        raise RsrError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    if path:
        p = Path(path).expanduser()
        if not p.exists():
            raise RsrError(f"{suite}: -T path={path} does not exist")
        return p
    if spec.local:
        # The user's tree first (a checkout's, edited), then the copy rsr ships. `rsr tasks new`
        # writes into ./my-tasks, which no suite reads.
        here = Path.cwd() / spec.local
        if here.is_dir():
            return here
        return bundled(spec.local) or REPO_ROOT / spec.local
    cached = tasks_home() / suite
    if cached.exists() and any(cached.iterdir()):
        return cached / spec.subdir if spec.subdir else cached
    fetchable = spec.hub or (spec.git_url and spec.git_commit)
    reason = f"not fetched; {how_to_fetch(suite)}" if fetchable else how_to_fetch(suite)
    raise RsrError(
        f"{spec.title} ({suite}) is not on this machine ({reason}).\n"
        f"Provide it with `-T path=/path/to/{suite}` or place the task directories in "
        f"{cached} (set RSR_TASKS_HOME to move the cache)."
    )


def _checkout(url: str, commit: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "init", "-q", str(tmp)], check=True, timeout=60, capture_output=True)
    subprocess.run([*git, "-C", str(tmp), "fetch", "-q", "--depth", "1", url, commit], check=True, timeout=600,
                   capture_output=True)
    subprocess.run([*git, "-C", str(tmp), "checkout", "-q", "FETCH_HEAD"], check=True, timeout=600,
                   capture_output=True)
    head = subprocess.run([*git, "-C", str(tmp), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    if not head.startswith(commit) and head != commit:
        raise subprocess.SubprocessError(f"fetched {head}, expected {commit}")
    shutil.rmtree(tmp / ".git")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.replace(dest)


PIN_RECORD = ".rsr-pin.json"
"""Written into a fetched copy: where it came from (tool, source, ref) and the digests found."""


class PinRecord(BaseModel):
    """`.rsr-pin.json`: how `rsr tasks fetch` made a copy and what it found in it."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    digest: str
    """`tasks_digest` of the whole copy."""
    tasks: dict[str, str] = Field(default_factory=dict)
    """task name -> its digest."""
    tool: str = "git"
    """What fetched it: `git`, or `harbor <version>`."""
    source: str | None = None
    """Where from: a git URL, the Harbor hub dataset, or the git-repo registry that stood in."""
    ref: str | None = None
    """The version ref asked for: a commit, or a hub version (`4.0.0`, `latest`)."""
    command: list[str] = Field(default_factory=list)
    fetched_at: str | None = None
    # Records written before Harbor sources existed name the commit and URL only.
    git_url: str | None = None
    commit: str | None = None

    @property
    def pinned_ref(self) -> str | None:
        return self.ref or self.commit


class PinCheck(BaseModel):
    """How a local copy of a suite relates to its pin (recorded in the eval's task metadata)."""

    model_config = ConfigDict(frozen=True)

    status: Literal["pinned", "unpinned", "no-pin"]
    """pinned: matches its pin; unpinned: differs but the run allowed it; no-pin: the suite has
    no public pin (ours, shipped with the code, or the paper's private sets)."""
    digest: str
    expected: str | None = None
    commit: str | None = None
    reason: str = ""
    ref: str | None = None
    tool: str | None = None
    source: str | None = None
    task_digests: dict[str, str] = Field(default_factory=dict)
    """The per-task digests the fetch recorded."""

    def metadata(self) -> dict[str, object]:
        """What an eval log's task metadata carries about the copy it ran."""
        return {"pin_status": self.status, "unpinned": self.status == "unpinned", "suite_digest": self.digest,
                "pinned_digest": self.expected, "pinned_commit": self.commit, "pin_reason": self.reason,
                "pin_ref": self.ref, "pin_tool": self.tool, "pin_source": self.source,
                "pinned_task_digests": dict(self.task_digests)}


def digests(root: Path) -> tuple[str, dict[str, str]]:
    """The digest a pin is compared with (every task below root, names and contents) and each
    task's own, from one load of the tasks."""
    from rsr.tasks.load import load_dataset, tasks_digest

    tasks = load_dataset(root).tasks
    return tasks_digest(tasks), {t.name: t.digest for t in tasks}


def suite_digest(root: Path) -> str:
    return digests(root)[0]


def task_digests(root: Path) -> dict[str, str]:
    return digests(root)[1]


def _pin_ref(spec: SuiteSpec) -> str | None:
    return spec.git_commit or spec.hub_ref


def _changed(recorded: dict[str, str], now: dict[str, str]) -> str:
    """Which tasks differ between two per-task digest maps, for an error message."""
    parts = [f"{label} {names[:5]}" + (" ..." if len(names) > 5 else "") for label, names in (
        ("changed", sorted(n for n in set(recorded) & set(now) if recorded[n] != now[n])),
        ("added", sorted(set(now) - set(recorded))),
        ("removed", sorted(set(recorded) - set(now)))) if names]
    return "; ".join(parts)


def check_pin(suite: str, root: Path, *, unpinned: bool = False) -> PinCheck:
    """Compare a local copy with the suite's pin; raise unless it matches or `unpinned`."""
    spec = SUITES.get(suite)
    digest = suite_digest(root)
    if spec is None or not (spec.digest or spec.git_commit or spec.hub):
        return PinCheck(status="no-pin", digest=digest)
    expected, reason = spec.digest, ""
    ref = _pin_ref(spec)
    record = _read_record(root)
    if expected is None:
        if record is None:
            reason = f"no {PIN_RECORD} (this copy was not made by `rsr tasks fetch {suite}`)"
        elif record.pinned_ref != ref:
            reason = f"fetched at ref {record.pinned_ref}, pinned {ref}"
        else:
            expected = record.digest
    if expected is not None and digest != expected:
        reason = f"digest {digest} differs from the pinned {expected}"
        if record is not None and record.tasks:
            changed = _changed(record.tasks, task_digests(root))
            reason += f" ({changed})" if changed else ""
    found = {} if record is None else {"tool": record.tool, "source": record.source or record.git_url,
                                       "task_digests": record.tasks}
    common = {"digest": digest, "expected": expected, "commit": spec.git_commit, "ref": ref, **found}
    if not reason:
        return PinCheck(status="pinned", **common)
    if not unpinned:
        raise RsrError(f"{spec.title} ({suite}) at {root} does not match its pin: {reason}.\n"
                       f"Run `rsr tasks fetch {suite}` for the pinned copy, or pass `-T unpinned=true` to "
                       "evaluate this copy anyway (the log marks the run as unpinned).")
    return PinCheck(status="unpinned", reason=reason, **common)


def _read_record(root: Path) -> PinRecord | None:
    for d in (root, root.parent):
        path = d / PIN_RECORD
        if path.is_file():
            try:
                return PinRecord.model_validate_json(path.read_text())
            except (OSError, ValueError):
                return None
    return None


def find_harbor() -> Path:
    """The `harbor` executable: $RSR_HARBOR, else `harbor` on PATH, else the checkout's
    `.cache/hvenv/bin/harbor` (where rsr's differential tests install it)."""
    named = os.environ.get("RSR_HARBOR")
    if named:
        path = Path(named).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise RsrError(f"RSR_HARBOR={named} is not an executable file")
        return path
    on_path = shutil.which("harbor")
    if on_path:
        return Path(on_path)
    for root in dict.fromkeys((Path.cwd(), REPO_ROOT)):
        candidate = root / ".cache" / "hvenv" / "bin" / "harbor"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    from rsr.suites.harbor_install import how_to_install

    raise RsrError("fetching a Harbor hub dataset runs Harbor's own downloader, and no `harbor` "
                   "executable was found ($RSR_HARBOR, PATH, .cache/hvenv/bin/harbor): "
                   + how_to_install())


def _harbor_version(exe: Path) -> str:
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        raise RsrError(f"{exe} --version failed: {e}") from e
    version = out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else ""
    if not version:
        raise RsrError(f"{exe} --version failed (exit {out.returncode}): {out.stderr.strip()[-300:]}")
    return version


def source_override(suite: str, source: str | None = None) -> str | None:
    """A source given for this fetch: the option, else $RSR_SUITE_SOURCE_<SUITE>."""
    return source or os.environ.get(f"RSR_SUITE_SOURCE_{suite.upper()}") or None


def _hub_url(exe: Path) -> str | None:
    """The hub's address as the installed Harbor has it (its own config, read by its own Python:
    the interpreter its `harbor` script starts with)."""
    try:
        first = exe.read_bytes()[:300].split(b"\n", 1)[0].decode(errors="replace")
    except OSError:
        return None
    python = first[2:].strip().split()[0] if first.startswith("#!") and first[2:].strip() else None
    if not python:
        return None
    code = "from harbor.registry.client.harbor.config import HARBOR_SUPABASE_URL as u; print(u)"
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    url = done.stdout.strip()
    return url if done.returncode == 0 and url.startswith("http") else None


def _check_hub_reachable(exe: Path, spec: SuiteSpec, timeout: float = 5.0) -> None:
    import socket
    from urllib.parse import urlsplit

    url = _hub_url(exe)
    if url is None:  # a Harbor laid out differently: its own errors will have to do
        return
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as e:
        reason = e.strerror or type(e).__name__
    raise RsrError(f"cannot fetch {spec.title} ({spec.name}): Harbor's hub {host}:{port} is not reachable "
                   f"from here ({reason}; offline?); fetch it on a machine with the network and copy the "
                   f"folder here (then -T path=DIR), or name a mirror with --source")


def _harbor_download(spec: SuiteSpec, source: str | None, out_dir: Path) -> tuple[Path, PinRecord]:
    """Run `harbor download` into out_dir; the copy's folder and a record of how it was made.

    From the hub the dataset is `org/name@ref`. A `source` is a Harbor git-repo registry (a
    git URL or `org/name[@ref]`, Harbor's `--repo`) holding the dataset under its bare name, which
    is all `--repo` accepts: tests and the rehearsal serve one on loopback."""
    assert spec.hub and spec.hub_ref
    exe = find_harbor()
    version = _harbor_version(exe)
    short = spec.hub.split("/", 1)[1]
    if source:
        cmd = [str(exe), "download", f"{short}@{spec.hub_ref}", "--repo", source]
        where = f"git-repo registry {source} (dataset {short}@{spec.hub_ref})"
    else:
        cmd = [str(exe), "download", f"{spec.hub}@{spec.hub_ref}"]
        where = f"Harbor hub {spec.hub}@{spec.hub_ref}"
    cmd += ["-o", str(out_dir), "--export"]
    if not source:
        _check_hub_reachable(exe, spec)  # offline: one line in seconds, not 75 s of retries
    # Rich would wrap Harbor's messages at 80 columns; a wide console keeps errors on one line.
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=env)
    except (OSError, subprocess.SubprocessError) as e:
        raise RsrError(f"`{' '.join(cmd)}` failed: {e}") from e
    if done.returncode != 0:
        text = (done.stdout + done.stderr).strip()
        # Harbor's own "Error: ..." lines say what went wrong; its progress bars do not.
        errors = [line[line.index("Error:"):].strip() for line in text.splitlines() if "Error:" in line]
        detail = "; ".join(errors) if errors else text[-800:]
        raise RsrError(f"could not fetch {spec.title} from {where}: `harbor download` exited "
                       f"{done.returncode}: {detail}")
    copy = out_dir / short
    if not copy.is_dir():
        raise RsrError(f"`{' '.join(cmd)}` wrote no {copy}")
    digest, tasks = digests(copy)
    if not tasks:
        raise RsrError(f"{where}: `harbor download` gave no task in {copy}")
    record = PinRecord(suite=spec.name, digest=digest, tasks=tasks, tool=f"harbor {version}",
                       source=source or f"harbor-hub:{spec.hub}", ref=spec.hub_ref,
                       command=[Path(cmd[0]).name, *cmd[1:-3]],
                       fetched_at=datetime.now(UTC).isoformat(timespec="seconds"))
    return copy, record


def fetch_suite(suite: str, *, dest: Path | None = None, git_url: str | None = None,
                source: str | None = None, repin: bool = False) -> tuple[Path, PinCheck]:
    """Fetch a suite's pinned version into the cache (or `dest`), verify it against a known
    digest, and record it. A git suite's commit is checked out (`git_url` or `source` names a
    mirror); a hub suite is downloaded by Harbor (`source`: a git-repo registry standing in for
    the hub). A copy already fetched at the same ref from the same source must keep its digests
    unless `repin`."""
    spec = SUITES.get(suite)
    if spec is None:
        raise RsrError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    source = source_override(suite, source)
    target = dest or tasks_home() / suite
    if spec.hub:
        return _fetch_hub(spec, target, source, repin)
    url = git_url or source or spec.git_url
    if not url or not spec.git_commit:
        raise RsrError(f"{spec.title} ({suite}) has no public source to fetch"
                       + (f": {spec.note}" if spec.note else ""))
    if not shutil.which("git"):
        raise RsrError("`rsr tasks fetch` needs git on PATH")
    try:
        _checkout(url, spec.git_commit, target)
    except (subprocess.SubprocessError, OSError) as e:
        detail = getattr(e, "stderr", b"") or b""
        detail = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        raise RsrError(f"could not fetch {url}@{spec.git_commit}: {e} {detail.strip()[-500:]}") from e
    root = target / spec.subdir if spec.subdir else target
    digest, tasks = digests(root)
    if spec.digest and digest != spec.digest:
        shutil.rmtree(target, ignore_errors=True)
        raise RsrError(f"{url}@{spec.git_commit} has digest {digest}, pinned {spec.digest}; removed the copy")
    record = PinRecord(suite=suite, digest=digest, tasks=tasks, tool="git", source=url,
                       ref=spec.git_commit, git_url=url, commit=spec.git_commit,
                       command=["git", "fetch", "--depth", "1", url, spec.git_commit],
                       fetched_at=datetime.now(UTC).isoformat(timespec="seconds"))
    _write_record(target, record)
    return root, PinCheck(status="pinned", digest=digest, expected=spec.digest or digest, commit=spec.git_commit,
                          ref=spec.git_commit, tool="git", source=url, task_digests=record.tasks)


def _write_record(target: Path, record: PinRecord) -> None:
    (target / PIN_RECORD).write_text(record.model_dump_json(indent=2, exclude_none=True) + "\n")


def _fetch_hub(spec: SuiteSpec, target: Path, source: str | None, repin: bool) -> tuple[Path, PinCheck]:
    previous = _read_record(target) if target.is_dir() else None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{spec.name}-fetch-", dir=target.parent) as tmp:
        copy, record = _harbor_download(spec, source, Path(tmp))
        if spec.digest and record.digest != spec.digest:
            raise RsrError(f"{record.source}@{spec.hub_ref} has digest {record.digest}, pinned "
                           f"{spec.digest}; kept nothing")
        same = (previous is not None and previous.pinned_ref == record.ref and previous.source == record.source)
        if same and previous is not None and previous.digest != record.digest and not repin:
            raise RsrError(
                f"{spec.title} ({spec.name}): {record.source}@{record.ref} now has digest {record.digest}, "
                f"but the copy fetched {previous.fetched_at or 'earlier'} recorded {previous.digest} "
                f"({_changed(previous.tasks, record.tasks) or 'same task names'}): the same ref no longer "
                f"gives the same tasks. Kept the earlier copy in {target}; pass --repin to replace it "
                "and record the new digests.")
        _write_record(copy, record)
        shutil.rmtree(target, ignore_errors=True)
        copy.replace(target)
    check = PinCheck(status="pinned", digest=record.digest, expected=spec.digest or record.digest,
                     ref=record.ref, tool=record.tool, source=record.source, task_digests=record.tasks)
    return target, check
