"""`rsr rehearse`: the Table 5 journey end to end, offline, on a stand-in for a public suite.

Each step is the command a user types, run as its own process and printed with where its output
went: fetch a suite through Harbor's downloader (from a loopback git-repo registry standing in
for the hub), `rsr eval table5` under the reference solution, `rsr report table5`, `rsr leaderboard
pin` and `add` on a test board, and `rsr leaderboard build`. What is real and what is not: README
("A rehearsal of the whole journey").
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console

from rsr.errors import RsrError

SUITE = "tb4"
ORG, REPO = "rehearsal", "terminal-bench"
LABEL = "oracle"
SUMMARY = "rehearsal.json"


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    command: str
    """As a user would type it (environment assignments first)."""
    rc: int
    seconds: float
    outputs: list[str] = Field(default_factory=list)


class Rehearsal(BaseModel):
    """`rehearsal.json`: every step, its exit status and where its output is."""

    model_config = ConfigDict(extra="forbid")

    out: str
    suite: str
    source: str
    ok: bool
    steps: list[Step]


def _tasks_source() -> Path:
    from rsr.bundled import bundled
    from rsr.suites.registry import REPO_ROOT

    rel = "examples/rehearsal/tasks"
    here = Path.cwd() / rel
    found = here if here.is_dir() else bundled(rel) or REPO_ROOT / rel
    if not found.is_dir():
        raise RsrError(f"the rehearsal's tasks ({rel}) are not in this checkout or install")
    return found


def _rsr_argv() -> list[str]:
    # The same interpreter and rsr as this process, whether installed or run from a checkout.
    return [sys.executable, "-m", "rsr.cli.main"]


def _board_yaml(gpu_tasks: list[str], digest: str | None = None) -> str:
    exclude = f"\n    exclude: [{', '.join(gpu_tasks)}]" if gpu_tasks else ""
    exclude += f"\n    digest: {digest}" if digest else ""
    return ("# A test board for the rehearsal: it accepts the reference solution (rsr/oracle) and\n"
            "# scripted models, and its page says so. It ranks the tasks every machine can run: a\n"
            "# task that needs a GPU is excluded (the run reports it as not run: needs a GPU).\n"
            "title: rsr rehearsal (test board)\n"
            "k: 3\n"
            "reference_agents: true\n"
            "suites:\n"
            f"  {SUITE}:{exclude or ' {}'}\n")


def rehearse(out: Annotated[Path, typer.Option("--out", help="Folder for everything the rehearsal "
                                                "writes (an earlier rehearsal's is replaced).")] = Path("rehearsal"),
             install_harbor: Annotated[bool, typer.Option(
                 "--install-harbor", help="Install Harbor 0.26 (the fetch step's downloader) into "
                                          ".cache/hvenv first if it is missing (needs PyPI).")] = False,
             ) -> None:
    """Rehearse the whole Table 5 journey offline: fetch a stand-in suite with Harbor's downloader,
    evaluate it (rsr/oracle, real Docker sandboxes, real verifier), report, add to a test
    leaderboard, build the site. Prints each step and where its output is."""
    from rsr.sandbox.gpu import needs_gpu
    from rsr.suites.registry import PIN_RECORD, SUITES
    from rsr.suites.standin import build_registry_repo, publish, serve_git
    from rsr.tasks.load import load_dataset
    from rsr.user_paths import output_dir

    console = Console(soft_wrap=True, highlight=False)
    output_dir(out, "--out")
    out = out.resolve()
    # Only an earlier rehearsal's folder is emptied: --out . must not delete a checkout.
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / SUMMARY).is_file())):
        raise RsrError(f"--out {out}: exists and is not an earlier rehearsal's folder (no {SUMMARY}); "
                       "name a new or empty folder")
    _need_harbor(console, install_harbor)  # the first line says how to get it, before anything is written
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    spec = SUITES[SUITE]
    assert spec.hub and spec.hub_ref
    dataset = spec.hub.split("/", 1)[1]
    tasks_home, logs, report, board, site = (out / "tasks", out / "logs" / LABEL, out / "report",
                                             out / "board", out / "site")
    # The rehearsal's outcome must not depend on this machine's GPU: say there is none, so the
    # GPU task shows the `not run: needs a GPU` path on every machine.
    env = {**os.environ, "RSR_TASKS_HOME": str(tasks_home), "RSR_HAS_GPU": "0"}
    shown_env = f"RSR_TASKS_HOME={shlex.quote(str(tasks_home))} RSR_HAS_GPU=0"
    steps: list[Step] = []

    def run(name: str, args: list[str], outputs: list[Path], capture: bool = False) -> str:
        line = f"{shown_env} rsr {shlex.join(args)}"
        console.print(f"\n[bold]==> {len(steps) + 1}. {name}[/bold]\n$ {line}")
        start = time.monotonic()
        done = subprocess.run([*_rsr_argv(), *args], env=env, check=False, text=True,
                              stdout=subprocess.PIPE if capture else None)
        rc = done.returncode
        if capture:
            console.print(done.stdout.rstrip())
        steps.append(Step(name=name, command=line, rc=rc, seconds=round(time.monotonic() - start, 1),
                          outputs=[str(p) for p in outputs]))
        for p in outputs:
            console.print(f"    output: {p}")
        if rc != 0:
            _finish(console, out, source, steps, ok=False)
            raise RsrError(f"rehearsal step {len(steps)} ({name}) exited {rc}; its output is above")
        return done.stdout or ""

    standin = build_registry_repo(out / "standin" / "work", dataset, spec.hub_ref, sorted(
        p for p in _tasks_source().iterdir() if (p / "task.toml").is_file()),
        description=f"stand-in for {spec.hub}@{spec.hub_ref} (rsr rehearsal)")
    served = out / "standin" / "served"
    publish(standin, served, ORG, REPO)
    console.print(f"[bold]==> 0. Stand-in source[/bold]: {standin} (registry.json: dataset "
                  f"{dataset}@{spec.hub_ref}) served by git daemon on loopback")
    source = ""
    with serve_git(served) as base:
        source = f"{base}/{ORG}/{REPO}.git"
        console.print(f"    {spec.title} ({SUITE}) is the Harbor hub dataset {spec.hub}@{spec.hub_ref}; "
                      f"the rehearsal fetches it from {source} instead")
        run(f"Fetch {SUITE} with Harbor's downloader", ["tasks", "fetch", SUITE, "--source", source],
            [tasks_home / SUITE / PIN_RECORD])
    gpu_tasks = sorted(t.name for t in load_dataset(tasks_home / SUITE).tasks if needs_gpu(t))
    run("Evaluate Table 5 (every fetched suite; the others are skipped and named)",
        ["eval", "table5", "--model", "mockllm/model", "--agent", "rsr/oracle", "--label", LABEL,
         "--log-dir", str(logs)], [logs])
    run("Report Table 5", ["report", "table5", str(logs), "--out", str(report)],
        [report / "table5.md", report / "table5.csv", report / "table5.png"])
    board.mkdir(parents=True)
    (board / "board.yaml").write_text(_board_yaml(gpu_tasks))
    console.print(f"\n    wrote the test board {board / 'board.yaml'}")
    digest = run(f"Pin {SUITE}'s task set on the board", ["leaderboard", "pin", SUITE, "--board", str(board)],
                 [board / "board.yaml"], capture=True).strip().splitlines()[-1]
    (board / "board.yaml").write_text(_board_yaml(gpu_tasks, digest))
    console.print(f"    pinned: suites.{SUITE}.digest = {digest}")
    run("Add the run to the test leaderboard",
        ["leaderboard", "add", str(logs), "--model-name", "reference solution (rehearsal)",
         "--harness", "rsr/oracle", "--board", str(board)], [board / "entries"])
    run("Build the leaderboard site", ["leaderboard", "build", "--out", str(site), "--board", str(board)],
        [site / "index.html", board / "README.md"])
    _finish(console, out, source, steps, ok=True)


def _need_harbor(console: Console, install: bool) -> None:
    from rsr.suites.registry import find_harbor

    try:
        find_harbor()
        return
    except RsrError:
        if not install:
            from rsr.suites.harbor_install import how_to_install

            raise RsrError("the rehearsal fetches its suite with Harbor 0.26's downloader, which is not "
                           "installed: run `rsr rehearse --install-harbor`, or "
                           + how_to_install()) from None
    from rsr.suites.harbor_install import HARBOR_VERSION, install_command
    from rsr.suites.harbor_install import install as install_it

    console.print(f"installing Harbor {HARBOR_VERSION} (the fetch step's downloader): "
                  f"{install_command() or 'no Python 3.12 here'}")
    console.print(f"    installed {install_it()}")


def _finish(console: Console, out: Path, source: str, steps: list[Step], *, ok: bool) -> None:
    summary = Rehearsal(out=str(out), suite=SUITE, source=source, ok=ok, steps=steps)
    path = out / SUMMARY
    path.write_text(summary.model_dump_json(indent=2) + "\n")
    console.print(f"\n[bold]rehearsal {'done' if ok else 'FAILED'}[/bold]: {len(steps)} step(s); summary {path}")
    if ok:
        console.print("Real: the fetch (Harbor's own downloader, from a git-repo registry on loopback), the "
                      "Docker sandboxes, the verifier's rewards, the report's and board's arithmetic. Not a "
                      "model's score: the agent typed in each task's reference solution (rsr/oracle), and "
                      "the suite is a three-task stand-in, not Terminal-Bench 4.")
