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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopback_openai import LoopbackOpenAI, Turn

CORE = Path(__file__).resolve().parents[2] / "tasks" / "core"
MODEL = "parity"
HARBOR_COMPOSE = ("services:\n  main:\n    build:\n      network: host\n"
                  "    network_mode: host\n")


@dataclass
class Scenario:
    name: str
    turns: list[Turn]
    task: str = "hello-world"
    toml: dict[str, str] = field(default_factory=dict)
    """Text replacements in task.toml (both copies)."""
    harbor_kwargs: dict[str, str] = field(default_factory=dict)
    """Harbor agent kwargs (`--ak k=v`); the rsr equivalents go in `rsr_args`."""
    rsr_args: dict[str, Any] = field(default_factory=dict)


def _copy_task(scenario: Scenario, root: Path, for_harbor: bool) -> None:
    dest = root / scenario.name
    shutil.copytree(CORE / scenario.task, dest)
    instruction = dest / "instruction.md"
    instruction.write_text(instruction.read_text() + f"\n[scenario: {scenario.name}]\n")
    toml = dest / "task.toml"
    text = toml.read_text()
    for old, new in scenario.toml.items():
        assert old in text, f"{scenario.name}: {old!r} not in task.toml"
        text = text.replace(old, new)
    if for_harbor:
        text = text.replace("allow_internet = false", "allow_internet = true")
        (dest / "environment" / "docker-compose.yaml").write_text(HARBOR_COMPOSE)
    toml.write_text(text)


def make_datasets(scenarios: list[Scenario], workdir: Path) -> tuple[Path, Path]:
    harbor, rsr = workdir / "harbor-ds", workdir / "rsr-ds"
    for scenario in scenarios:
        _copy_task(scenario, harbor, for_harbor=True)
        _copy_task(scenario, rsr, for_harbor=False)
    return harbor, rsr


def run_harbor(venv: Path, dataset: Path, server: LoopbackOpenAI, jobs: Path,
               kwargs: dict[str, str], concurrency: int = 4, timeout: int = 900) -> Path:
    """One Harbor job over every scenario; returns the job directory."""
    env = {**os.environ, "OPENAI_API_KEY": "loopback-dummy",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    args = [str(venv / "bin" / "harbor"), "run", "-p", str(dataset), "--agent", "terminus-2",
            "-m", f"openai/{MODEL}", "--ak", f"api_base={server.base_url}",
            "--ak", "record_terminal_session=false", "-n", str(concurrency), "-o", str(jobs),
            "-y", "-q"]
    for key, value in kwargs.items():
        args += ["--ak", f"{key}={value}"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"harbor run failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                             f"{done.stderr[-3000:]}")
    return max(jobs.iterdir(), key=lambda p: p.stat().st_mtime)


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


def run_rsr(dataset: Path, server: LoopbackOpenAI, scenarios: list[Scenario], prompts: str,
            log_dir: Path, agent: Callable[..., Any] | None = None) -> dict[str, Any]:
    """rsr/terminus2 on every scenario through Inspect's OpenAI-compatible provider."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.agent import as_solver

    from rsr.harness.terminus2 import terminus2
    from rsr.suites.inspect_tasks import tasks_task

    os.environ["LOOPBACK_API_KEY"] = "loopback-dummy"
    os.environ["LOOPBACK_BASE_URL"] = server.base_url
    samples: dict[str, Any] = {}
    # Scenarios with their own harness arguments run as their own eval; the rest share one.
    groups: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        groups.setdefault(json.dumps(scenario.rsr_args, sort_keys=True), []).append(scenario)
    for key, group in groups.items():
        make = agent or terminus2
        solver = as_solver(make(prompts=prompts, **json.loads(key)))
        logs = inspect_eval(
            tasks_task("core", dataset, [s.name for s in group], None), solver=solver,
            model=f"openai-api/loopback/{MODEL}", display="none", log_dir=str(log_dir),
            log_format="eval", fail_on_error=False, max_retries=0, timeout=60,
            model_base_url=server.base_url)
        for sample in logs[0].samples or []:
            samples[str(sample.id)] = sample
    return samples


# ---------------------------------------------------------------- comparison

_PROMPT_HOST = re.compile(r"([A-Za-z0-9_.-]+)@[A-Za-z0-9_.-]+:")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")
_CONTAINER = re.compile(r"\b[0-9a-f]{12}\b")


def normalise(text: str) -> str:
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


def first_difference(reference: list[dict[str, Any]], ours: list[dict[str, Any]],
                     same_template: bool = True) -> str | None:
    """None when the request sequences match; else a description of the first difference.

    With `same_template=False` (prompts=rsr against Harbor's words) only the structure is
    compared: request count, roles, and every assistant message verbatim.
    """
    a, b = conversation(reference), conversation(ours)
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
            if (same_template or ra == "assistant") and ca != cb:
                k = next((n for n in range(min(len(ca), len(cb))) if ca[n] != cb[n]),
                         min(len(ca), len(cb)))
                return (f"request {i} message {j} ({ra}) differs at character {k}:\n"
                        f"  Harbor: {ca[max(0, k - 120):k + 240]!r}\n"
                        f"  rsr:    {cb[max(0, k - 120):k + 240]!r}")
    return None


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="rsr-parity-"))
