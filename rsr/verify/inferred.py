"""Deliverables inferred from a task's reference solution, for tasks that declare none.

Strict mode gives the checker the pristine image plus the agent's deliverables. A core task
declares them (`[verifier] allow_changes`); a Harbor task (every TB2 task) declares nothing, and
a denylist of files that could subvert its tests (commands on PATH, `~/.local/bin/env`, apt
hooks, pytest plugins, ...) only waits for the next one. So the deliverables of an undeclared
task are inferred instead, from what its reference solution changes:

1. the reference solution (never an agent) runs in the task's real sandbox;
2. its changes are captured exactly as the verifier captures an agent's (`deliverables.capture`);
3. the candidate roots are the changed paths outside the workdir, collapsed: a tree the solution
   created is one root; anything else it changed (a file it wrote or deleted, a directory whose
   owner or mode it changed) is an exact path, kept itself only;
4. roots the tests do not need are pruned: the tests run (strict, in a pristine container)
   on the workdir alone, then with each group of roots (by top-level directory) and each root
   left out; a root is kept only when the tests fail without it. Caches, logs and histories
   the solution left behind are pruned this way, without anyone naming them;
5. the result is recorded per task digest (the whole task directory: instruction, tests,
   solution, environment) in a reviewable JSON file outside the task
   (`rsr tasks infer-deliverables`); rsr ships such files for the suites it pins
   (`rsr/verify/inferred_records/*.json`), and a user's go to `rsr`'s cache (`deliverables/`) or any
   file `RSR_DELIVERABLES` names.

The verifier then treats the inferred roots as it treats declared ones, with start-up hooks never
carried and the residual audit judging everything kept (nothing of it is "allowed").
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rsr.errors import RsrError
from rsr.sandbox.cache import cache_dir

SHIPPED_DIR = Path(__file__).resolve().parent / "inferred_records"
STORE = "deliverables"
ENV_FILES = "RSR_DELIVERABLES"
COMMAND = "rsr tasks infer-deliverables"


class InferredTask(BaseModel):
    """One task's inferred deliverables (a reviewer reads `roots` and `pruned`)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    digest: str = Field(description="the task directory's digest (rsr.tasks.load.directory_digest)")
    status: Literal["inferred", "reference-failed", "no-reference"] = "inferred"
    roots: list[str] = Field(default_factory=list, description="trees the reference created, beside the "
                             "workdir (glob-escaped: a root keeps itself and what lies below it)")
    exact: list[str] = Field(default_factory=list, description="paths kept themselves only: files the "
                             "reference wrote or deleted, directories whose owner or mode it changed")
    workdir: str | None = None
    pruned: list[str] = Field(default_factory=list, description="candidate roots the tests passed without")
    admitted: list[str] = Field(default_factory=list, description="the reference's new Python modules and packages "
                                "at the other install routes' paths (another site directory, the user site): "
                                "honest variants, part of roots and exact")
    unpruned: int = Field(0, description="candidate roots kept untried (the trial budget ran out)")
    changed: int = Field(0, description="paths the reference solution changed")
    trials: int = Field(0, description="test runs the inference took")
    image: str = Field("", description="the image id the reference solution ran on")
    note: str = ""
    inferred_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


class DeliverablesFile(BaseModel):
    """A suite's inferred deliverables, keyed by task digest."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    source: str = Field("", description="the suite or directory the tasks came from")
    tasks: dict[str, InferredTask] = Field(default_factory=dict)


def read_file(path: Path) -> DeliverablesFile:
    try:
        return DeliverablesFile.model_validate(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError) as e:
        raise RsrError(f"{path}: cannot read inferred deliverables: {e}") from e
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise RsrError(f"{path}: field {field}: {first['msg']}") from e


def write_file(path: Path, found: Iterable[InferredTask], source: str) -> DeliverablesFile:
    """Merge `found` into the file at `path` (created), one entry per digest."""
    current = read_file(path) if path.is_file() else DeliverablesFile(source=source)
    for entry in found:
        current.tasks[entry.digest] = entry
    current.source = current.source or source
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(current.model_dump_json(indent=2) + "\n")
    os.replace(tmp, path)
    return current


def default_store() -> Path:
    return cache_dir(STORE)


def sources() -> list[Path]:
    """Every file looked in, shipped first: rsr's own, the cache's, then `$RSR_DELIVERABLES`."""
    found = sorted(SHIPPED_DIR.glob("*.json")) if SHIPPED_DIR.is_dir() else []
    found += sorted(default_store().glob("*.json"))
    found += [Path(p) for p in os.environ.get(ENV_FILES, "").split(os.pathsep) if p]
    return found


USABLE = ("inferred", "no-reference")


def lookup(digest: str, files: Iterable[Path] | None = None) -> InferredTask | None:
    """The record for a task digest (a usable record before a failed one), else None."""
    best: InferredTask | None = None
    for path in sources() if files is None else files:
        if not path.is_file():
            continue
        entry = read_file(path).tasks.get(digest)
        if entry is not None and entry.digest == digest and (best is None or entry.status in USABLE):
            best = entry
    return best


def usable(digest: str) -> InferredTask | None:
    entry = lookup(digest)
    return entry if entry is not None and entry.status in USABLE else None


NO_REFERENCE_POLICY = ("no reference solution: under strict the deliverables are the workdir alone (nothing "
                       "outside it reaches the checker; start-up hooks are never carried and the audit judges "
                       "everything kept)")


def no_reference(name: str, digest: str, workdir: str | None) -> InferredTask:
    """The stated strict policy of a task without a reference solution (nothing to infer from):
    the workdir alone, the policy every declared task starts from."""
    return InferredTask(name=name, digest=digest, status="no-reference", workdir=workdir, note=NO_REFERENCE_POLICY)


def refusal(names: list[str], target: str, digests: list[str] | None = None) -> str:
    """The one-line message strict mode refuses undeclared tasks with."""
    failed = [n for n, d in zip(names, digests or [], strict=False)
              if (e := lookup(d)) is not None and e.status == "reference-failed"]
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    why = (f" ({', '.join(failed[:4])}: the reference solution does not pass under strict, see the record)"
           if failed else "")
    return (f"-T integrity=strict: {len(names)} task(s) declare no deliverables (task.toml verifier.allow_changes) and "
            f"have none inferred: {shown}{why}. Infer them from the reference solutions with "
            f"`{COMMAND} {target}` (or run in warn mode, Harbor's)")


def escape(path: str) -> str:
    """A path as a root that matches only itself (and what lies below it)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


# rsr's own mount points (the verifier's, the agent's and the artifacts' log folders): never a
# deliverable, so never a candidate root worth a test run.
RSR_MOUNTS = "/logs"


def candidate_roots(kept: list[str], added: list[str], deleted: list[str], directories: list[str],
                    workdir: str | None) -> dict[str, bool]:
    """The reference's changes outside the workdir and rsr's mounts, collapsed (module doc, step
    3): path -> whether it is a tree (a directory the reference created, kept with what lies below
    it) rather than an exact path (kept itself only)."""
    wd = (workdir or "").rstrip("/")
    new, dirs = set(added), set(directories)
    roots: dict[str, bool] = {}
    trees: list[str] = []
    for path in sorted(set(kept) | set(deleted)):
        if wd and (path == wd or path.startswith(wd + "/")):
            continue
        if path == RSR_MOUNTS or path.startswith(RSR_MOUNTS + "/"):
            continue
        if any(path.startswith(t + "/") for t in trees):
            continue
        tree = path in dirs and path in new
        roots[path] = tree
        if tree:
            trees.append(path)
    return roots


_SITE = re.compile(r"^(/usr(?:/local)?/lib/python3(?:\.\d+)?/(?:site|dist)-packages|"
                   r"/(?:root|home/[^/]+)/\.local/lib/python3\.\d+/site-packages)/([^/]+)$")


def user_sites(site_dirs: Iterable[str], home: str = "/root") -> list[str]:
    """The user site directories (`pip install --user`) of the Pythons whose site dirs are given."""
    versions = sorted({m.group(1) for d in site_dirs if (m := re.search(r"python(3\.\d+)", d))})
    return [f"{home}/.local/lib/python{v}/site-packages" for v in versions]


def variants(kept: dict[str, bool], added: Iterable[str], site_dirs: list[str]) -> dict[str, bool]:
    """Honest variants of the reference's deliverables (invariant 7): a module or package the
    reference *added* directly in a site directory, at the same name in every other site
    directory (`pip install --user` instead of a system install, another Python's dist-packages),
    its `.dist-info`/`.egg-info` along. Only added names: a modified package of the image at
    another path would shadow it (the audit judges what is kept all the same)."""
    new = set(added)
    out: dict[str, bool] = {}
    for path, tree in kept.items():
        m = _SITE.match(path)
        if m is None or path not in new:
            continue
        site, name = m.group(1), m.group(2)
        for other in site_dirs:
            if other != site and f"{other}/{name}" not in kept:
                out[f"{other}/{name}"] = tree
    return out


def groups(roots: list[str]) -> dict[str, list[str]]:
    """Roots by their top-level directory, for pruning whole groups at once."""
    by_top: dict[str, list[str]] = {}
    for r in roots:
        by_top.setdefault("/" + r.strip("/").split("/", 1)[0], []).append(r)
    return by_top
