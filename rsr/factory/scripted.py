"""`rsr-scripted/<role>`: a scripted Inspect model for offline factory runs and tests.

A plain `mockllm/model` replays its outputs in order across every call, which makes concurrent
multi-sample stages non-deterministic. This provider instead picks each reply by *what is being
asked*: the model name is the role (`rsr-scripted/planner`), and a fixture file lists rules
matched against the sample (task name, epoch, metadata), the harness running it, and the prompt
text. The reply index is the number of assistant messages already in the conversation, so a
multi-turn harness run walks through the rule's replies in order.

Fixture (YAML):
```
rules:
  - role: executor            # the model name after rsr-scripted/ (required)
    task: hello-world         # sample metadata task_name (glob; optional)
    harness: terminus2        # the rsr harness running the sample (optional)
    epoch: 1                  # the sample's epoch (optional)
    metadata: {index: 0}      # equality on sample metadata (optional)
    contains: "some text"     # substring of the whole prompt (optional)
    replies: [...]            # strings, or mappings sent as JSON; the last one repeats
```
The first matching rule wins; no match is an error naming what was asked.
"""

from __future__ import annotations

import fnmatch
import json
from functools import cache
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from pydantic import BaseModel, ConfigDict, Field

from rsr.errors import RsrError, UnknownOptionError

PROVIDER = "rsr-scripted"


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str
    task: str | None = None
    harness: str | None = None
    epoch: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    contains: str | None = None
    replies: list[str | dict[str, Any]] = Field(min_length=1)


class Fixture(BaseModel):
    model_config = ConfigDict(extra="forbid")

    definitions: dict[str, Any] = Field(default_factory=dict)
    """Free-form YAML anchors that rules refer to (ignored otherwise)."""
    rules: list[Rule]


@cache
def load_fixture(path: str) -> Fixture:
    # The shared loader: a missing, non-YAML or non-text file is one line naming the file.
    from rsr.yaml_model import load_yaml_model

    return load_yaml_model(path, Fixture, "scripted-model fixture (-M fixture=FILE.yaml)")


def _context() -> tuple[dict[str, Any], int | None, str | None]:
    """Sample metadata, epoch and harness name of the sample this call belongs to."""
    from inspect_ai.solver._task_state import sample_state
    from inspect_ai.util import store

    state = sample_state()
    if state is None:
        return {}, None, None
    settings = store().get("rsr_harness") or {}
    return dict(state.metadata or {}), state.epoch, settings.get("harness")


def choose(fixture: Fixture, role: str, messages: list[ChatMessage], metadata: dict[str, Any],
           epoch: int | None, harness: str | None) -> str:
    text = "\n".join(m.text for m in messages)
    task = str(metadata.get("task_name", ""))
    for rule in fixture.rules:
        if rule.role != role:
            continue
        if rule.task is not None and not fnmatch.fnmatchcase(task, rule.task):
            continue
        if rule.harness is not None and rule.harness != harness:
            continue
        if rule.epoch is not None and rule.epoch != epoch:
            continue
        if any(metadata.get(k) != v for k, v in rule.metadata.items()):
            continue
        if rule.contains is not None and rule.contains not in text:
            continue
        turn = sum(1 for m in messages if m.role == "assistant")
        reply = rule.replies[min(turn, len(rule.replies) - 1)]
        return reply if isinstance(reply, str) else json.dumps(reply)
    raise RsrError(f"scripted model: no rule for role={role} task={task or '-'} "
                   f"harness={harness or '-'} epoch={epoch} metadata keys="
                   f"{sorted(metadata)}; last message starts {messages[-1].text[:120]!r}")


@modelapi(name=PROVIDER)
def scripted() -> type[ModelAPI]:
    return ScriptedModel


class ScriptedModel(ModelAPI):
    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), fixture: str | None = None,
                 **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if model_args:  # Inspect hands a provider every -M; a typo'd `fixture` lands here
            raise UnknownOptionError(f"{PROVIDER}/{model_name}", "-M", list(model_args), ["fixture"])
        if not fixture:
            raise RsrError(f"{PROVIDER}/{model_name}: pass the rules file as model arg "
                           "`fixture` (models.model_args.fixture in factory.yaml)")
        self.fixture = load_fixture(str(fixture))
        roles = sorted({r.role for r in self.fixture.rules})
        if model_name not in roles:  # a typo'd role would otherwise fail at its first call
            raise RsrError(f"{PROVIDER}/{model_name}: {fixture} has no rule for role "
                           f"{model_name!r} (its roles: {', '.join(roles)})")

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo],
                       tool_choice: ToolChoice, config: GenerateConfig) -> ModelOutput:
        metadata, epoch, harness = _context()
        content = choose(self.fixture, self.model_name, input, metadata, epoch, harness)
        output = ModelOutput.from_content(f"{PROVIDER}/{self.model_name}", content)
        prompt_tokens = max(1, sum(len(m.text) for m in input) // 4)
        completion_tokens = max(1, len(content) // 4)
        output.usage = ModelUsage(input_tokens=prompt_tokens, output_tokens=completion_tokens,
                                  total_tokens=prompt_tokens + completion_tokens)
        return output
