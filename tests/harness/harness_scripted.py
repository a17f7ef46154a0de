"""Scripted model outputs and an eval runner for harness tests (real Docker, real tmux)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.agent import Agent, as_solver
from inspect_ai.log import EvalSample
from inspect_ai.model import ChatMessage, Model, ModelOutput, ModelUsage, get_model

from rsr.suites.inspect_tasks import tasks_task

CORE = Path(__file__).resolve().parents[2] / "tasks" / "core"


def output(content: str, input_tokens: int = 200, stop_reason: str = "stop") -> ModelOutput:
    out = ModelOutput.from_content("mockllm/model", content, stop_reason=stop_reason)  # type: ignore[arg-type]
    out.usage = ModelUsage(input_tokens=input_tokens, output_tokens=40,
                           total_tokens=input_tokens + 40)
    return out


def reply(*commands: str | tuple[str, float], complete: bool = False, analysis: str = "a",
          plan: str = "p", **extra: Any) -> str:
    cmds = [{"keystrokes": c, "duration": 2.0} if isinstance(c, str)
            else {"keystrokes": c[0], "duration": c[1]} for c in commands]
    return json.dumps({"analysis": analysis, "plan": plan, "commands": cmds,
                       "task_complete": complete, **extra})


WRITE_HELLO = "echo 'Hello, world!' > /app/hello.txt\n"
WRITE_WRONG = "echo 'Goodbye' > /app/hello.txt\n"


def task_copy(tmp_path: Path, name: str = "hello-world", **toml_replace: str) -> Path:
    """A private copy of a core task (its own root), with text replacements in task.toml."""
    root = tmp_path / "suite"
    dest = root / name
    shutil.copytree(CORE / name, dest)
    toml = dest / "task.toml"
    text = toml.read_text()
    for old, new in toml_replace.items():
        assert old in text, old
        text = text.replace(old, new)
    toml.write_text(text)
    return root


def run(agent: Agent, outputs: Iterable[str | ModelOutput] | Callable[..., ModelOutput],
        root: Path = CORE, tasks: str = "hello-world", log_dir: Path | None = None,
        model: Model | None = None) -> EvalSample:
    if log_dir is None:
        log_dir = Path(tempfile.mkdtemp(prefix="rsr-harness-logs-"))
    if callable(outputs):
        custom: Any = outputs
    else:
        custom = [o if isinstance(o, ModelOutput) else output(o) for o in outputs]
    if model is None:
        model = get_model("mockllm/model", custom_outputs=custom)
    logs = inspect_eval(tasks_task("core", root, tasks, None), solver=as_solver(agent),
                        model=model, display="none", log_dir=str(log_dir),
                        log_format="eval", fail_on_error=False)
    log = logs[0]
    assert log.samples, f"no samples in log (status {log.status}, error {log.error})"
    return log.samples[0]


def kinds(sample: EvalSample) -> list[str]:
    return [(m.metadata or {}).get("rsr", {}).get("kind", "?") for m in sample.messages]


def passed(sample: EvalSample) -> float:
    assert sample.scores, f"sample was not scored (error: {sample.error})"
    score = next(iter(sample.scores.values()))
    return float(score.value["passed"])  # type: ignore[index]


def text_of(messages: list[ChatMessage]) -> str:
    return "\n".join(m.text for m in messages)
