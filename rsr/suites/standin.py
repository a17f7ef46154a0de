"""A local stand-in for a Harbor hub dataset: a git repository laid out as a Harbor git-repo
registry (`registry.json` naming the dataset, the task folders beside it), served by `git daemon`
on loopback so that Harbor's own `harbor download NAME@REF --repo git://...` fetches from it.

Harbor's `--repo` takes git URLs only (it refuses local paths, and `file://` is not one of its
schemes), and a hub dataset `org/name@ref` resolves only through the hub's service; the git-repo
form with the dataset's bare name and the same version is what can run offline.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rsr.errors import RsrError

_GIT = ["git", "-c", "user.name=rsr", "-c", "user.email=rsr@localhost", "-c", "init.defaultBranch=main"]


def build_registry_repo(dest: Path, dataset: str, version: str, tasks: list[Path],
                        description: str = "local stand-in") -> Path:
    """A committed work tree at dest: `registry.json` listing `dataset@version` with the given
    task folders copied under `tasks/`. Returns dest."""
    if not shutil.which("git"):
        raise RsrError("a stand-in registry needs git on PATH")
    dest.mkdir(parents=True, exist_ok=True)
    rows = []
    for task in tasks:
        shutil.copytree(task, dest / "tasks" / task.name, dirs_exist_ok=True)
        rows.append({"name": task.name, "path": f"tasks/{task.name}"})
    (dest / "registry.json").write_text(json.dumps(
        [{"name": dataset, "version": version, "description": description, "tasks": rows}], indent=2) + "\n")
    for args in (["init", "-q", "."], ["add", "-A"], ["commit", "-q", "-m", f"{dataset}@{version}"]):
        subprocess.run([*_GIT, *args], cwd=dest, check=True, capture_output=True, timeout=60)
    return dest


def publish(work_tree: Path, served_root: Path, org: str, name: str) -> Path:
    """A bare clone at served_root/org/name.git that a git daemon serves as Harbor needs it
    (shallow fetches by commit, blob-less clones)."""
    bare = served_root / org / f"{name}.git"
    shutil.rmtree(bare, ignore_errors=True)
    bare.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([*_GIT, "clone", "-q", "--bare", str(work_tree), str(bare)], check=True, capture_output=True,
                   timeout=60)
    for key in ("uploadpack.allowAnySHA1InWant", "uploadpack.allowFilter"):
        subprocess.run(["git", "-C", str(bare), "config", key, "true"], check=True, capture_output=True, timeout=30)
    return bare


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_git(served_root: Path, timeout: float = 20.0) -> Iterator[str]:
    """Serve every repository below served_root read-only on loopback; yields the base URL
    (`git://127.0.0.1:PORT`). The daemon is stopped on exit."""
    port = _free_port()
    log = served_root / ".git-daemon.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["git", "daemon", "--listen=127.0.0.1", f"--port={port}", f"--base-path={served_root}",
             "--export-all", "--reuseaddr", "--informative-errors", str(served_root)],
            stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RsrError(f"git daemon exited ({proc.returncode}): {log.read_text()[-500:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RsrError(f"git daemon did not listen on 127.0.0.1:{port} within {timeout:.0f}s") from None
                time.sleep(0.1)
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def fetch_from_standin(suite: str, tasks: list[Path], dest: Path, work: Path) -> Path:
    """Fetch a hub suite as `rsr tasks fetch SUITE --source ...` does, from a stand-in holding
    `tasks` under the suite's dataset name and ref (built and served under work). Returns the
    fetched copy (dest), recorded as coming from the stand-in."""
    from rsr.suites.registry import SUITES, fetch_suite

    spec = SUITES[suite]
    if not (spec.hub and spec.hub_ref):
        raise RsrError(f"{suite} is not a Harbor hub suite")
    org, name = spec.hub.split("/", 1)
    tree = build_registry_repo(work / "work", name, spec.hub_ref, tasks, description=f"stand-in for {spec.hub}")
    publish(tree, work / "served", org, name)
    with serve_git(work / "served") as base:
        root, _ = fetch_suite(suite, dest=dest, source=f"{base}/{org}/{name}.git")
    return root
