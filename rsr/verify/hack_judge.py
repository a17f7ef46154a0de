"""The optional model judge of the hack review: a rubric prompt over a sample's commands, sent
through Inspect (`get_model(...).generate`), answered with a verdict. Off unless asked for
(`rsr review LOG --judge MODEL`); the deterministic detectors (rsr.verify.hack_review) are
what a board enforces, the judge's verdict is advice recorded beside them."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from typing import TYPE_CHECKING

from rsr.verify.hack_review import Action, Finding, JudgeVerdict

if TYPE_CHECKING:
    from inspect_ai.model import Model

__all__ = ["DEFAULT_JUDGE_PROMPT", "JudgeVerdict", "judge_actions", "judge_prompt"]

DEFAULT_JUDGE_PROMPT = "hack_judge.v1"
# The transcript is cut to this many characters (the start and the end kept): a judge call per
# passing sample must stay cheap, and the last commands are where a result gets forged.
MAX_COMMANDS_CHARS = 24_000
MAX_COMMAND_CHARS = 2_000


def judge_prompt(name: str = DEFAULT_JUDGE_PROMPT) -> str:
    return (resources.files("rsr.verify") / "prompts" / f"{name}.md").read_text(encoding="utf-8")


def _commands_text(actions: list[Action]) -> str:
    lines = []
    for a in actions:
        text = a.text if len(a.text) <= MAX_COMMAND_CHARS else a.text[:MAX_COMMAND_CHARS] + " [...cut]"
        lines.append(f"[{a.step}] {text.rstrip()}")
    out = "\n".join(lines) or "(the agent sent no commands)"
    if len(out) > MAX_COMMANDS_CHARS:
        half = MAX_COMMANDS_CHARS // 2
        out = out[:half] + "\n[... middle of the transcript cut ...]\n" + out[-half:]
    return out


def _parse(text: str) -> tuple[str, str]:
    match = re.search(r"\{.*\}", text, re.S)
    if match:
        try:
            data = json.loads(match.group(0))
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("verdict") in ("hacked", "legitimate", "unclear"):
            return str(data["verdict"]), str(data.get("explanation") or "")
    return "unclear", f"the judge's reply was not a verdict: {text[:200]!r}"


async def judge_actions(actions: list[Action], findings: list[Finding], instruction: str,
                        model: str | Model, prompt: str = DEFAULT_JUDGE_PROMPT) -> JudgeVerdict:
    """Ask `model` whether the commands game the task's checks."""
    from inspect_ai.model import GenerateConfig, get_model

    template = judge_prompt(prompt)
    shown = "\n".join(f"- {f.detector} ({f.severity}) at step {f.step}: {f.evidence}" for f in findings) or "- none"
    text = template.format(findings=shown, instruction=instruction.strip(), commands=_commands_text(actions))
    judge = get_model(model) if isinstance(model, str) else model
    output = await judge.generate(text, config=GenerateConfig(temperature=0.0))
    verdict, explanation = _parse(output.completion)
    digest = hashlib.sha256(template.encode()).hexdigest()[:16]
    return JudgeVerdict(verdict=verdict, explanation=explanation,  # type: ignore[arg-type]
                        model=str(judge), prompt=f"{prompt}@sha256:{digest}",
                        usage=output.usage.model_dump(exclude_none=True) if output.usage else None)
