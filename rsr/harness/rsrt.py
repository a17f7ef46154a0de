"""`rsr/rsrt`: Terminus 2 plus reflection on hidden verification.

When the agent confirms completion (or runs out of episodes), the task's verifier runs in a
*copy* of the sandbox: the verifier's own snapshot (`rsr.verify.snapshot`), a container made
from a commit of the agent's, removed afterwards. The agent's own container never sees the
tests, and only the pass/fail outcome reaches the agent, inside a reflection prompt. The run
continues until a pass, the reflection limit or the wall-clock budget. The sample's score is
still the ordinary scorer's, run on the agent's container.
"""

from __future__ import annotations

import time
from typing import Any

from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessage
from inspect_ai.util import SandboxEnvironment

from rsr.errors import RsrError
from rsr.harness import prompts
from rsr.harness.control import user_message
from rsr.harness.protocol import ReplyFormat
from rsr.harness.steps import stepwise
from rsr.harness.terminus2 import (
    OBSERVATION_LIMIT,
    TOKEN_BUDGET,
    TerminalHarness,
    Terminus2Config,
    WaitMode,
    parse_fixes,
)
from rsr.options import check_options, option_model


class VerifierCopyError(RsrError):
    """The sandbox could not be copied for a hidden verification."""


async def verify_in_copy(sbx: SandboxEnvironment, metadata: dict[str, Any]) -> Any:
    """Run the task verifier in a throwaway copy of `sbx`'s container; returns VerifierResult.

    The verifier always works on a snapshot of the agent's container; a task that asks for
    live verification still gets a snapshot here, because mid-run the tests must never enter
    the container the agent keeps working in.
    """
    from rsr.sandbox.backing import container_of
    from rsr.tasks.load import task_from_metadata
    from rsr.verify.verifier import verify

    task = task_from_metadata(metadata)
    if await container_of(sbx) is None:
        raise VerifierCopyError("rsr/rsrt verifies in a copy of the sandbox and needs a Docker-backed sandbox; "
                                f"this sample uses {type(getattr(sbx, '_sandbox', sbx)).__name__}")
    isolation = "snapshot" if task.config.verifier.isolation == "live" else task.config.verifier.isolation
    return await verify(task, sbx, isolation=isolation, final=False)


class RSRTHarness(TerminalHarness):
    name = "rsrt"

    def __init__(self, config: Terminus2Config, max_reflections: int,
                 budget_minutes: float) -> None:
        super().__init__(config)
        self.max_reflections = max_reflections
        self.budget_minutes = budget_minutes
        self.verifications: list[dict[str, Any]] = []

    def timeout_sec(self) -> float | None:
        # The wall-clock budget replaces the task's agent timeout: RSRT is a data-discovery
        # harness that is allowed to keep trying long after a normal run would stop.
        if self.config.agent_timeout_sec is not None:
            return self.config.agent_timeout_sec
        return self.budget_minutes * 60

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "max_reflections": self.max_reflections,
                "budget_minutes": self.budget_minutes}

    def result_extra(self) -> dict[str, Any]:
        return {"verifications": self.verifications}

    async def on_completed(self, terminal_state: str) -> ChatMessage | None:
        return await self._verify_and_reflect(terminal_state, "completed")

    async def on_exhausted(self, terminal_state: str) -> ChatMessage | None:
        return await self._verify_and_reflect(terminal_state, "max_episodes")

    async def _verify_and_reflect(self, terminal_state: str, trigger: str) -> ChatMessage | None:
        assert self._sbx is not None
        started = time.monotonic()
        try:
            result = await verify_in_copy(self._sbx, self.metadata)
        except (VerifierCopyError, OSError) as e:
            # Without a copy there is nothing safe to reflect on: stop, the scorer still runs.
            self.verifications.append({"turn": self.turn, "trigger": trigger, "error": str(e)})
            transcript().info(f"hidden verification unavailable, stopping: {e}",
                              source="rsr/rsrt")
            self.end_reason = "completed" if trigger == "completed" else "max_episodes"
            return None
        record = {"turn": self.turn, "trigger": trigger, "passed": result.passed,
                  "reward": result.reward, "seconds": round(time.monotonic() - started, 2)}
        self.verifications.append(record)
        # Only the outcome is logged: test output stays out of the log's agent-facing parts.
        transcript().info(record, source="rsr/rsrt hidden verification")
        if result.passed:
            self.end_reason = "verified"
            return None
        if len(self.verifications) > self.max_reflections:
            self.end_reason = "reflection_limit"
            return None
        attempt = len(self.verifications)
        text = prompts.render(prompts.REFLECTION, self.config.prompt_version, attempt=attempt,
                              limit=self.max_reflections + 1,
                              terminal_state=terminal_state.rstrip("\n"))
        # After a confirmed completion the reflection stands where the next observation would;
        # after exhausted episodes the last observation is already in the conversation.
        body = terminal_state.rstrip("\n") if trigger == "completed" else None
        return user_message(text, "reflection", self.name, turn=self.turn, public=body,
                            control_parts=[text])


@agent
def rsrt(
    budget_minutes: float = 180,
    max_reflections: int = 5,
    max_episodes: int = 200,
    temperature: float | None = None,
    reply_format: ReplyFormat = "json",
    context_window: int | None = None,
    summarise_free_tokens: int = 8_000,
    wait_mode: WaitMode = "fixed",
    observation_limit: int = OBSERVATION_LIMIT,
    agent_timeout_sec: float | None = None,
    prompts: str = "rsr",
    fixes: str | list[str] | None = None,
    record_tokens: str | None = None,
    token_budget: int | None = TOKEN_BUDGET,
    **options: Any,
) -> Agent:
    """Terminus 2 with hidden verification in a sandbox copy and reflection on failure.

    Args:
        budget_minutes: Wall-clock budget of the whole run (replaces the task's agent timeout).
        max_reflections: Failed verifications answered with a reflection prompt before the
            run stops.
        max_episodes: Model turns per attempt; exhausting them also triggers verification.
        temperature: Sampling temperature; None leaves the provider's default. Recorded.
        reply_format: "json" or "xml".
        context_window: Context size in tokens; None uses the model's known context length.
        summarise_free_tokens: Summarise when fewer free tokens than this remain.
        wait_mode: "fixed" or "adaptive" waiting after each command. Recorded.
        observation_limit: Bytes of terminal output kept per observation (head and tail).
        agent_timeout_sec: Hard time limit overriding budget_minutes (tests, debugging).
        prompts: Prompt pack of the shared Terminus 2 loop (rsr, harbor or a directory).
        fixes: Reference quirks to correct (see rsr/terminus2); none = parity mode.
        record_tokens: "engine" or a tokenizer: per-call token ids (see rsr.harness.tokens).
        token_budget: Tokens (prompt + completion, all model calls) before the run stops;
            0 or null: no budget.
    """
    check_options("rsr/rsrt", "-S", rsrt, locals())
    config = option_model("rsr/rsrt", "-S", Terminus2Config,
        max_episodes=max_episodes, temperature=temperature, reply_format=reply_format,
        context_window=context_window, summarise_free_tokens=summarise_free_tokens,
        wait_mode=wait_mode, observation_limit=observation_limit,
        agent_timeout_sec=agent_timeout_sec, prompts=prompts, fixes=parse_fixes(fixes),
        record_tokens=record_tokens, token_budget=token_budget or None)

    async def execute(state: AgentState) -> AgentState:
        return await RSRTHarness(config, max_reflections, budget_minutes)(state)

    return stepwise(execute)
