"""The differential test's runner: the same scripted conversations through Harbor's Terminus 2
and through rsr/terminus2, recorded by one loopback model server, compared message by message.

Each scenario is a copy of a small core task whose instruction carries `[scenario: NAME]`,
which the server routes by. Harbor runs every scenario in one job (one `harbor run` over a
dataset directory, trials concurrent); rsr runs them in one `inspect eval`. Harbor's copies
get `allow_internet = true` and a host-network compose file, because Harbor 0.26 cannot build
or run offline tasks on these machines (shared/notes/harbor-here.md); nothing in the tasks
uses the network. Harbor's asciinema recording is turned off (`record_terminal_session=false`)
so both shells start the same way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loopback_openai import LoopbackOpenAI, Turn

CORE = Path(__file__).resolve().parents[2] / "tasks" / "core"
TEST_TASKS = Path(__file__).resolve().parent / "tasks"
MODEL = "parity"
HARBOR_COMPOSE = ("services:\n  main:\n    build:\n      network: host\n"
                  "    network_mode: host\n")


@dataclass
class Scenario:
    name: str
    turns: list[Turn]
    task: str = "hello-world"
    root: Path = CORE
    """The directory holding `task` (the core suite, or the test tasks of tests/harness/tasks)."""
    toml: dict[str, str] = field(default_factory=dict)
    """Text replacements in task.toml (both copies)."""
    files: dict[str, str] = field(default_factory=dict)
    """Files added to (or, under `append`, appended to) both copies, by path in the task."""
    append: dict[str, str] = field(default_factory=dict)
    harbor_kwargs: dict[str, Any] = field(default_factory=dict)
    """Harbor agent kwargs (`--ak k=v`); the rsr equivalents go in `rsr_args`."""
    rsr_args: dict[str, Any] = field(default_factory=dict)


def _copy_task(scenario: Scenario, root: Path, for_harbor: bool) -> None:
    dest = root / scenario.name
    shutil.copytree(scenario.root / scenario.task, dest)
    instruction = dest / "instruction.md"
    instruction.write_text(instruction.read_text() + f"\n[scenario: {scenario.name}]\n")
    for path, content in scenario.files.items():
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_text(content)
    for path, content in scenario.append.items():
        (dest / path).write_text((dest / path).read_text() + content)
    toml = dest / "task.toml"
    text = toml.read_text()
    for old, new in scenario.toml.items():
        assert old in text, f"{scenario.name}: {old!r} not in task.toml"
        text = text.replace(old, new)
    if for_harbor:
        text = text.replace("allow_internet = false", "allow_internet = true")
        (dest / "environment" / "docker-compose.yaml").write_text(HARBOR_COMPOSE)
    toml.write_text(text)


def _harbor_args(venv: Path, dataset: Path, server: LoopbackOpenAI, jobs: Path,
                 kwargs: dict[str, Any], concurrency: int) -> list[str]:
    args = [str(venv / "bin" / "harbor"), "run", "-p", str(dataset), "--agent", "terminus-2",
            "-m", f"openai/{MODEL}", "--ak", f"api_base={server.base_url}",
            "--ak", "record_terminal_session=false", "-n", str(concurrency), "-o", str(jobs),
            "-y", "-q"]
    for key, value in kwargs.items():
        args += ["--ak", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    return args


@dataclass
class HarborJobs:
    running: list[tuple[Path, subprocess.Popen[str]]]

    def kill(self) -> None:
        for _, process in self.running:
            if process.poll() is None:
                process.kill()
                process.communicate()

    def wait(self, timeout: int = 900) -> dict[str, dict[str, Any]]:
        """Each scenario's trial (see `harbor_trials`), once every job has finished."""
        trials: dict[str, dict[str, Any]] = {}
        for jobs, process in self.running:
            out, _ = process.communicate(timeout=timeout)
            if process.returncode != 0:
                raise AssertionError(f"harbor run failed ({process.returncode}):\n{out[-4000:]}")
            trials.update(harbor_trials(max(jobs.iterdir(), key=lambda p: p.stat().st_mtime)))
        return trials


def start_harbor(venv: Path, scenarios: list[Scenario], server: LoopbackOpenAI, workdir: Path,
                 concurrency: int = 4) -> HarborJobs:
    """Harbor's Terminus 2 on every scenario: one job per distinct agent configuration, the
    jobs side by side, in the background."""
    env = {**os.environ, "OPENAI_API_KEY": "loopback-dummy",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    groups: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        groups.setdefault(json.dumps(scenario.harbor_kwargs, sort_keys=True), []).append(scenario)
    running = []
    for n, (key, group) in enumerate(groups.items()):
        dataset = workdir / f"harbor-ds-{n}"
        for scenario in group:
            _copy_task(scenario, dataset, for_harbor=True)
        jobs = workdir / f"harbor-jobs-{n}"
        args = _harbor_args(venv, dataset, server, jobs, json.loads(key), concurrency)
        running.append((jobs, subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                               stderr=subprocess.STDOUT, text=True)))
    return HarborJobs(running)


def start_harbor_oracle(venv: Path, tasks: list[Path], workdir: Path) -> HarborJobs:
    """Harbor's oracle on copies of `tasks` (internet allowed, host network, as above)."""
    dataset = workdir / "harbor-oracle-ds"
    for task in tasks:
        dest = dataset / task.name
        shutil.copytree(task, dest)
        toml = dest / "task.toml"
        toml.write_text(toml.read_text().replace("allow_internet = false", "allow_internet = true"))
        compose = dest / "environment" / "docker-compose.yaml"
        if not compose.exists():
            compose.write_text(HARBOR_COMPOSE)
    jobs = workdir / "harbor-oracle-jobs"
    args = [str(venv / "bin" / "harbor"), "run", "-p", str(dataset), "--agent", "oracle",
            "-n", str(len(tasks)), "-o", str(jobs), "-y", "-q"]
    return HarborJobs([(jobs, subprocess.Popen(args, stdout=subprocess.PIPE,
                                               stderr=subprocess.STDOUT, text=True))])


def run_harbor(venv: Path, scenarios: list[Scenario], server: LoopbackOpenAI, workdir: Path,
               concurrency: int = 4, timeout: int = 900) -> dict[str, dict[str, Any]]:
    return start_harbor(venv, scenarios, server, workdir, concurrency).wait(timeout)


def harbor_trials(job: Path) -> dict[str, dict[str, Any]]:
    """Per scenario: its result.json and, when written, its trajectory.json."""
    found: dict[str, dict[str, Any]] = {}
    for trial in job.iterdir():
        result = trial / "result.json"
        if not trial.is_dir() or not result.is_file():
            continue
        name = trial.name.rsplit("__", 1)[0]
        trajectory = trial / "agent" / "trajectory.json"
        found[name] = {"result": json.loads(result.read_text()), "dir": trial,
                       "trajectory": json.loads(trajectory.read_text())
                       if trajectory.is_file() else None}
    return found


def renamed(scenario: Scenario, suffix: str) -> Scenario:
    """The same conversation under another tag, so that runs sharing the server stay apart."""
    return replace(scenario, name=f"{scenario.name}.{suffix}")


@dataclass
class Variant:
    """One way to run rsr/terminus2 over the scenarios (a prompt pack, maybe fixes)."""

    args: dict[str, Any]
    only: tuple[str, ...] | None = None
    """Scenario names to run (None: all)."""


def run_rsr(scenarios: list[Scenario], server: LoopbackOpenAI, workdir: Path,
            variants: dict[str, Variant], agent: Callable[..., Any] | None = None,
            oracle_tasks: list[Path] | None = None) -> dict[str, Any]:
    """rsr/terminus2 on the scenarios once per variant, in one `inspect eval` (one task per
    variant and harness configuration), through Inspect's OpenAI-compatible provider. The
    samples come back keyed by `<scenario>.<variant>`; with `oracle_tasks`, rsr/oracle's samples
    of those tasks too (keyed `<task>.oracle`)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.agent import as_solver

    from rsr.harness.terminus2 import terminus2
    from rsr.suites.inspect_tasks import tasks_task

    os.environ["LOOPBACK_API_KEY"] = "loopback-dummy"
    make = agent or terminus2
    root = workdir / "rsr-ds"
    tasks = []
    for suffix, variant in variants.items():
        groups: dict[str, list[Scenario]] = {}
        for scenario in scenarios:
            if variant.only is None or scenario.name in variant.only:
                args = {**scenario.rsr_args, **variant.args}
                groups.setdefault(json.dumps(args, sort_keys=True), []).append(
                    renamed(scenario, suffix))
        for key, group in groups.items():
            for scenario in group:
                _copy_task(scenario, root, for_harbor=False)
            solver = as_solver(make(**json.loads(key)))
            tasks.append(tasks_task("core", root, [s.name for s in group], None, solver))
    if oracle_tasks:
        from rsr.harness.oracle import oracle

        copies = workdir / "rsr-oracle-ds"
        for task in oracle_tasks:
            shutil.copytree(task, copies / f"{task.name}.oracle")
        tasks.append(tasks_task("core", copies, [f"{t.name}.oracle" for t in oracle_tasks], None,
                                as_solver(oracle())))
    logs = inspect_eval(tasks, model=f"openai-api/loopback/{MODEL}",
                        model_base_url=server.base_url, display="none",
                        log_dir=str(workdir / "logs"), log_format="eval", fail_on_error=False,
                        max_retries=0, timeout=60, max_tasks=len(tasks))
    return {str(sample.id): sample for log in logs for sample in log.samples or []}


# ---------------------------------------------------------------- comparison

_PROMPT_HOST = re.compile(r"([A-Za-z0-9_.-]+)@[A-Za-z0-9_.-]+:")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")
_CONTAINER = re.compile(r"\b[0-9a-f]{12}\b")


_TAG = re.compile(r"\[scenario: ([A-Za-z0-9_-]+)[A-Za-z0-9_.-]*\]")


def normalise(text: str) -> str:
    text = _TAG.sub(r"[scenario: \1]", text)
    text = _PROMPT_HOST.sub(r"\1@HOST:", text)
    text = _TIMESTAMP.sub("TIMESTAMP", text)
    return _CONTAINER.sub("CONTAINER", text)


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def conversation(requests: list[dict[str, Any]]) -> list[list[tuple[str, str]]]:
    return [[(m.get("role", "?"), normalise(_content(m))) for m in r.get("messages", [])]
            for r in requests]


def terminal_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "@HOST:" in line]


def first_difference(reference: list[dict[str, Any]], ours: list[dict[str, Any]],
                     same_template: bool = True) -> str | None:
    """None when the request sequences match; else a description of the first difference.

    With `same_template=False` (prompts=rsr against Harbor's words) the words may differ but
    nothing else: the request count, the roles, every assistant message verbatim, and every
    terminal line (a line with the shell prompt) of every user message.
    """
    a, b = conversation(reference), conversation(ours)
    for i, (ra_, rb_) in enumerate(zip(reference, ours, strict=False)):
        # Same request fields (no sampling parameter one side sets and the other not) and
        # the same fields per message (no reasoning or tool fields sent by one side only).
        if sorted(ra_) != sorted(rb_):
            return f"request {i}: fields {sorted(ra_)} (Harbor) vs {sorted(rb_)} (rsr)"
        for j, (ma, mb) in enumerate(zip(ra_.get("messages", []), rb_.get("messages", []),
                                         strict=False)):
            if sorted(ma) != sorted(mb):
                return (f"request {i} message {j}: fields {sorted(ma)} (Harbor) vs "
                        f"{sorted(mb)} (rsr)")
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b):
            return (f"request count differs: Harbor sent {len(a)}, rsr sent {len(b)}; first "
                    f"extra request's last message: "
                    f"{(a[i] if i < len(a) else b[i])[-1]!r:.2000}")
        for j in range(max(len(a[i]), len(b[i]))):
            if j >= len(a[i]) or j >= len(b[i]):
                return (f"request {i}: Harbor sent {len(a[i])} messages, rsr {len(b[i])}")
            (ra, ca), (rb, cb) = a[i][j], b[i][j]
            if ra != rb:
                return f"request {i} message {j}: role {ra!r} (Harbor) vs {rb!r} (rsr)"
            if not same_template and ra == "user" and terminal_lines(ca) != terminal_lines(cb):
                return (f"request {i} message {j}: the terminal lines differ:\n"
                        f"  Harbor: {terminal_lines(ca)!r:.1500}\n"
                        f"  rsr:    {terminal_lines(cb)!r:.1500}")
            if (same_template or ra == "assistant") and ca != cb:
                k = next((n for n in range(min(len(ca), len(cb))) if ca[n] != cb[n]),
                         min(len(ca), len(cb)))
                return (f"request {i} message {j} ({ra}) differs at character {k}:\n"
                        f"  Harbor: {ca[max(0, k - 120):k + 240]!r}\n"
                        f"  rsr:    {cb[max(0, k - 120):k + 240]!r}")
    return None


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="rsr-parity-"))
