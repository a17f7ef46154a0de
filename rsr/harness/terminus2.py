"""`rsr/terminus2`: the generic terminal harness (a reimplementation of Terminus 2's behaviour).

The model drives a tmux session in the sample's sandbox through JSON (or XML) replies.
`TerminalHarness` holds the loop; StateM and RSRT subclass it and override its hooks.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util import SandboxEnvironment, sandbox, span, store
from pydantic import BaseModel, ConfigDict, Field

from rsr.harness import prompts
from rsr.harness.context import (
    LAST_LEVEL,
    ContextOverflowError,
    estimate_tokens,
    hand_off,
    is_overflow_error,
)
from rsr.harness.control import Kind, assistant_message, turn_meta, user_message
from rsr.harness.protocol import Reply, ReplyFormat, parse_reply
from rsr.harness.tmux import TmuxError, TmuxSession
from rsr.harness.tmux_install import ensure_tmux

OBSERVATION_LIMIT = 10_000
HARNESS_VERSION = "1.0"
STORE_SETTINGS = "rsr_harness"
STORE_RESULT = "rsr_harness_result"

WaitMode = Literal["fixed", "adaptive"]
EndReason = Literal["completed", "max_episodes", "agent_timeout", "context_overflow",
                    "verified", "reflection_limit", "budget"]


class Terminus2Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_episodes: int = Field(200, ge=1, description="Model turns before the run stops.")
    temperature: float | None = Field(
        None, description="Sampling temperature; None leaves the provider default (recorded).")
    reply_format: ReplyFormat = Field("json", description="json or xml replies.")
    context_window: int | None = Field(
        None, ge=1, description="Tokens; None = the model's known context length, if any.")
    summarise_free_tokens: int = Field(
        8_000, ge=0, description="Summarise when fewer free context tokens than this remain.")
    wait_mode: WaitMode = Field(
        "fixed", description="fixed: wait each command's duration; adaptive: return early "
                             "when the shell is idle again.")
    observation_limit: int = Field(OBSERVATION_LIMIT, ge=200, description="Bytes kept.")
    agent_timeout_sec: float | None = Field(
        None, gt=0, description="Override of the task's agent timeout (not for leaderboards).")
    prompt_version: str = Field(prompts.PROMPT_VERSION, description="Template version.")
    private_guidance: str | None = Field(
        None, description="Text put before the conversation in every model call as a system "
                          "message and never recorded in the run's messages (RSR executor "
                          "runbooks). Logs record only its sha256.")


@dataclass
class Review:
    """A harness's verdict on a parsed reply, before anything is typed."""

    allow_complete: bool = True
    run_commands: bool = True
    notes: list[str] = field(default_factory=list)
    """Control text shown to the model with the next observation."""


def cap_observation(text: str, limit: int = OBSERVATION_LIMIT) -> str:
    """Keep the head and tail of `text` within `limit` UTF-8 bytes."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    marker_room = 80
    half = max((limit - marker_room) // 2, 1)
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[-half:].decode("utf-8", errors="ignore")
    omitted = len(data) - len(head.encode()) - len(tail.encode())
    return f"{head}\n[... output limited: {omitted} bytes omitted ...]\n{tail}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


class TerminalHarness:
    """One run of a terminal harness on one sample. Subclasses override the hooks below."""

    name = "terminus2"
    reply_model: type[Reply] = Reply

    def __init__(self, config: Terminus2Config) -> None:
        self.config = config
        self.messages: list[ChatMessage] = []   # everything, for the log
        self.context: list[ChatMessage] = []    # what the model sees now
        self.turn = 0
        self.attempt_turns = 0
        self.end_reason: EndReason | None = None
        self.last_output: ModelOutput | None = None
        self.last_used_tokens: int | None = None
        self.compactions: list[dict[str, Any]] = []
        self.turn_timings: list[dict[str, float]] = []
        self.instruction = ""
        self.metadata: dict[str, Any] = {}
        self.deadline_sec: float | None = None
        self.started = 0.0
        self._model: Model | None = None
        self._tmux: TmuxSession | None = None
        self._sbx: SandboxEnvironment | None = None
        self._window: int | None = None

    # ------------------------------------------------------------------ hooks

    def extra_instructions(self) -> str:
        """Text added after the reply format in the first prompt and hand-offs."""
        return ""

    def review(self, reply: Reply) -> Review:
        """Called before a reply's commands run: may withhold them or the completion."""
        return Review()

    def after_turn(self, reply: Reply) -> None:
        """Called after a reply's commands ran and their output was read."""

    def display(self) -> str:
        """Control text shown with every observation (StateM's workflow state)."""
        return ""

    async def on_completed(self, terminal_state: str) -> ChatMessage | None:
        """After a confirmed completion: None ends the run, a message continues it."""
        self.end_reason = "completed"
        return None

    async def on_exhausted(self, terminal_state: str) -> ChatMessage | None:
        """After max_episodes turns without completion: None ends the run."""
        self.end_reason = "max_episodes"
        return None

    def timeout_sec(self) -> float | None:
        if self.config.agent_timeout_sec is not None:
            return self.config.agent_timeout_sec
        value = self.metadata.get("agent_timeout_sec")
        return float(value) if value else None

    def settings(self) -> dict[str, Any]:
        return {
            "harness": self.name,
            "harness_version": HARNESS_VERSION,
            "prompt_version": self.config.prompt_version,
            "prompt_digest": prompts.prompt_digest(self.config.prompt_version),
            **self.config.model_dump(exclude={"private_guidance"}),
            "private_guidance_sha256": (
                hashlib.sha256(self.config.private_guidance.encode()).hexdigest()
                if self.config.private_guidance else None),
            "context_window_resolved": self.context_window(),
            "agent_timeout_resolved_sec": self.deadline_sec,
        }

    # ------------------------------------------------------------------ run

    async def __call__(self, state: AgentState) -> AgentState:
        sample = sample_state()
        self.metadata = dict(sample.metadata) if sample is not None else {}
        self.instruction = _instruction(state.messages)
        self._model = get_model()
        self.deadline_sec = self.timeout_sec()
        self.started = time.monotonic()
        settings = self.settings()
        store().set(STORE_SETTINGS, settings)
        transcript().info(settings, source=f"rsr/{self.name} settings")
        with anyio.move_on_after(self.deadline_sec or math.inf) as scope:
            try:
                await self._run()
            finally:
                if self._tmux is not None:
                    with anyio.CancelScope(shield=True):
                        await self._tmux.close()
                state.messages = list(self.messages)
                if self.last_output is not None:
                    state.output = self.last_output
        if scope.cancelled_caught:
            self.end_reason = "agent_timeout"
            transcript().info(f"agent timeout after {self.deadline_sec:g} s: the run stops here "
                              "and the sample is scored as it stands", source=f"rsr/{self.name}")
        result = {"end_reason": self.end_reason, "turns": self.turn,
                  "elapsed_sec": round(time.monotonic() - self.started, 3),
                  "compactions": self.compactions, **self.result_extra()}
        store().set(STORE_RESULT, result)
        transcript().info(result, source=f"rsr/{self.name} result")
        return state

    def result_extra(self) -> dict[str, Any]:
        return {}

    def context_window(self) -> int | None:
        if self.config.context_window is not None:
            return self.config.context_window
        if self._model is None:
            return None
        if self._window is None:
            from inspect_ai.model._model_info import get_model_info

            try:
                info = get_model_info(self._model)
            except Exception:  # unknown models: no proactive summarising, errors still degrade
                info = None
            self._window = (info.context_length if info is not None else None) or 0
        return self._window or None

    def reply_format_text(self) -> str:
        name = prompts.FORMAT_XML if self.config.reply_format == "xml" else prompts.FORMAT_JSON
        return prompts.render(name, self.config.prompt_version)

    def _first_prompt(self, terminal_state: str, extra: str) -> str:
        wait_note = ("- The screen may come back sooner than the duration when the shell is "
                     "idle again, so generous durations cost little.\n"
                     if self.config.wait_mode == "adaptive" else "")
        reply_format = self.reply_format_text() + (f"\n\n{extra}" if extra else "")
        return prompts.render(prompts.FIRST, self.config.prompt_version,
                              reply_format=reply_format.rstrip("\n"), wait_note=wait_note,
                              instruction=self.instruction.strip(),
                              terminal_state=terminal_state.rstrip("\n"))

    async def _run(self) -> None:
        self._sbx = sandbox()
        how = await ensure_tmux(self._sbx, bool(self.metadata.get("allow_internet", False)),
                                str(self.metadata.get("task_name", "")))
        if how == "installed":
            transcript().info("tmux was missing and has been installed", source=self.name)
        self._tmux = TmuxSession(self._sbx, cwd=self.metadata.get("workdir"),
                                 user=_agent_user(self.metadata))
        await self._tmux.start()
        screen = await self._observe()

        extra = self.extra_instructions()
        public_first = self._first_prompt(screen, "")
        first = self._first_prompt(screen, extra)
        display = self.display()
        content = first + (f"\n\n{display}" if display else "")
        self._append(user_message(
            content, "first_prompt", self.name, turn=0,
            public=public_first if content != public_first else None,
            control_parts=[p for p in (extra, display) if p], control=False), context=True)

        pending_confirm = False
        while True:
            if self.attempt_turns >= self.config.max_episodes:
                message = await self.on_exhausted(await self._observe(screen_only=True))
                if message is None:
                    return
                self.attempt_turns = 0
                pending_confirm = False
                self._append(message, context=True)
                continue
            self.turn += 1
            self.attempt_turns += 1
            async with span(f"turn {self.turn}", type="turn"):
                finished, pending_confirm = await self._turn(pending_confirm)
            if finished:
                return

    async def _turn(self, pending_confirm: bool) -> tuple[bool, bool]:
        """One model turn. Returns (run finished, a completion is awaiting confirmation)."""
        assert self._tmux is not None
        turn_start = time.monotonic()
        started_at = _now()
        output = await self._generate_turn()
        if output is None:
            self.end_reason = "context_overflow"
            return True, pending_confirm
        model_s = time.monotonic() - turn_start
        parsed = parse_reply(output.completion, self.config.reply_format, self.reply_model)
        timing = {"model_s": round(model_s, 4)}
        if parsed.reply is None:
            self._append(assistant_message(output, "invalid_reply", self.name, turn=self.turn,
                                           timing=timing, started_at=started_at,
                                           warnings=parsed.warnings), context=True)
            screen = await self._observe(screen_only=True)
            transcript().info(f"parse error: {parsed.error}", source=self.name)
            self._append(user_message(
                prompts.render(prompts.PARSE_ERROR, self.config.prompt_version,
                               error=parsed.error, terminal_state=screen.rstrip("\n")),
                "parse_error", self.name, turn=self.turn), context=True)
            self._record_timing(timing, turn_start, 0.0)
            return False, pending_confirm

        reply = parsed.reply
        reply_message = assistant_message(output, "reply", self.name, turn=self.turn,
                                          timing=timing, started_at=started_at,
                                          warnings=parsed.warnings)
        self._append(reply_message, context=True)
        if parsed.warnings:
            transcript().info("auto-corrected reply: " + " ".join(parsed.warnings),
                              source=self.name)
        review = self.review(reply)

        # wait_s is the time spent typing and waiting (one exec per command in adaptive mode);
        # with a fixed wait, the pure sleep is what counts as waiting.
        wait_s = 0.0
        for command in reply.commands if review.run_commands else []:
            waited = await self._tmux.send_and_wait(
                command.keystrokes, command.duration,
                adaptive=self.config.wait_mode == "adaptive")
            wait_s += waited.waited if self.config.wait_mode == "adaptive" else command.duration
        mark = time.monotonic()
        observation = await self._observe()
        timing["read_s"] = round(time.monotonic() - mark, 4)
        self.after_turn(reply)
        self._record_timing(timing, turn_start, wait_s)
        reply_message.metadata["rsr"]["timing"] = dict(timing)  # type: ignore[index]

        complete = reply.task_complete and review.allow_complete
        if complete and pending_confirm:
            message = await self.on_completed(observation)
            if message is None:
                return True, False
            self.attempt_turns = 0
            self._append(message, context=True)
            await self._maybe_compact()
            return False, False

        extras: list[str] = []
        if parsed.warnings:
            extras.append(prompts.render(prompts.PARSE_WARNING, self.config.prompt_version,
                                         warnings=" ".join(parsed.warnings)).rstrip("\n"))
        extras += review.notes
        display = self.display()
        if display:
            extras.append(display)
        kind: Kind = "observation"
        body = observation.rstrip("\n")
        control_parts = list(extras)
        if complete:
            kind = "confirm"
            body = prompts.render(prompts.CONFIRM, self.config.prompt_version,
                                  terminal_state=body).rstrip("\n")
            control_parts.insert(0, body)
        elif display:
            kind = "state_display"
        is_control = complete or bool(extras)
        content = "\n\n".join([body, *extras]) if is_control else observation
        self._append(user_message(content, kind, self.name, turn=self.turn,
                                  public=observation if is_control else None,
                                  control_parts=control_parts, control=is_control),
                     context=True)
        await self._maybe_compact()
        return False, complete

    # ------------------------------------------------------------------ helpers

    def _append(self, message: ChatMessage, context: bool) -> None:
        self.messages.append(message)
        if context:
            self.context.append(message)
        meta = turn_meta(message)
        if meta is not None and meta.control and message.role == "user":
            # Shown in `inspect view`'s transcript, so a reader sees which words the harness
            # (not the task or the terminal) put in front of the model.
            words = "\n\n".join(meta.control_parts) if meta.control_parts else message.text
            transcript().info(f"harness control ({meta.kind}):\n{words}",
                              source=f"rsr/{self.name} control")

    def _record_timing(self, timing: dict[str, float], turn_start: float, wait_s: float) -> None:
        total = time.monotonic() - turn_start
        timing["wait_s"] = round(wait_s, 4)
        timing["total_s"] = round(total, 4)
        timing["overhead_s"] = round(total - timing["model_s"] - wait_s, 4)
        self.turn_timings.append(dict(timing))

    async def _observe(self, screen_only: bool = False) -> str:
        assert self._tmux is not None
        try:
            text = await (self._tmux.screen() if screen_only else self._tmux.read_new())
        except TmuxError:
            if await self._tmux.alive():
                raise
            # The shell exited (e.g. the model typed `exit`): give it a new one.
            await self._tmux.start()
            text = ("[the terminal session had ended; a new shell was started]\n"
                    + await self._tmux.screen())
        return cap_observation(text, self.config.observation_limit)

    async def _generate(self, messages: list[ChatMessage]) -> ModelOutput:
        assert self._model is not None
        config = GenerateConfig(temperature=self.config.temperature)
        if self.config.private_guidance:
            # Only the model call sees the guidance: self.messages (the public history) never does.
            messages = [ChatMessageSystem(content=self.config.private_guidance), *messages]
        try:
            output = await self._model.generate(messages, config=config)
        except Exception as e:
            if is_overflow_error(e):
                raise ContextOverflowError(str(e)) from e
            raise
        if output.stop_reason == "model_length":
            raise ContextOverflowError("the model reported stop_reason=model_length")
        return output

    async def _generate_turn(self) -> ModelOutput | None:
        level = 0
        while True:
            try:
                output = await self._generate(self.context)
            except ContextOverflowError as e:
                if level > LAST_LEVEL:
                    transcript().info(f"context overflow even after a bare hand-off: {e}",
                                      source=self.name)
                    return None
                level = await self._compact(level, reason=f"context-length error: {e}")
                level += 1
                continue
            self.last_output = output
            usage = output.usage
            self.last_used_tokens = (usage.input_tokens + usage.output_tokens
                                     if usage is not None and usage.input_tokens else None)
            return output

    async def _maybe_compact(self) -> None:
        window = self.context_window()
        if window is None:
            return
        if self.last_used_tokens is not None:
            used = self.last_used_tokens + estimate_tokens(self.context[-1:])
        else:
            used = estimate_tokens(self.context)
        if window - used < self.config.summarise_free_tokens:
            await self._compact(0, reason=f"free context {window - used} < "
                                          f"{self.config.summarise_free_tokens} tokens")

    async def _compact(self, level: int, reason: str) -> int:
        """Replace the model's context by a hand-off message; returns the level reached."""
        assert self._tmux is not None
        screen = await self._observe(screen_only=True)
        extra = self.extra_instructions()
        reply_format = self.reply_format_text() + (f"\n\n{extra}" if extra else "")
        handoff = await hand_off(
            self._generate, self.context, level=level, instruction=self.instruction.strip(),
            terminal_state=screen.rstrip("\n"), reply_format=reply_format.rstrip("\n"),
            harness=self.name, turn=self.turn, now=_now)
        for message in handoff.log:
            self._append(message, context=False)
        display = self.display()
        text = handoff.text + (f"\n\n{display}" if display else "")
        message = user_message(text, "handoff", self.name, turn=self.turn)
        self.messages.append(message)
        self.context = [message]
        self.last_used_tokens = None
        record = {"turn": self.turn, "level": handoff.level, "reason": reason}
        self.compactions.append(record)
        transcript().info(f"context compacted (level {handoff.level}): {reason}",
                          source=self.name)
        return handoff.level


def _agent_user(metadata: dict[str, Any]) -> str | None:
    """The task's `[agent] user` (the shell runs as that user), when the sample is an rsr task."""
    if not metadata.get("task_dir"):
        return None
    from rsr.tasks.load import task_from_metadata

    return task_from_metadata(metadata).config.agent.user


def _instruction(messages: list[ChatMessage]) -> str:
    for message in messages:
        if message.role == "user":
            return message.text
    raise ValueError("the sample has no user message to take the task instruction from")


@agent
def terminus2(
    max_episodes: int = 200,
    temperature: float | None = None,
    reply_format: ReplyFormat = "json",
    context_window: int | None = None,
    summarise_free_tokens: int = 8_000,
    wait_mode: WaitMode = "fixed",
    observation_limit: int = OBSERVATION_LIMIT,
    agent_timeout_sec: float | None = None,
    private_guidance: str | None = None,
) -> Agent:
    """Terminus 2-style terminal harness over tmux.

    Args:
        max_episodes: Model turns before the run stops (200 in the reference TB2 runs).
        temperature: Sampling temperature; None leaves the provider's default. Recorded.
        reply_format: "json" (reference) or "xml".
        context_window: Context size in tokens; None uses the model's known context length.
        summarise_free_tokens: Summarise when fewer free tokens than this remain.
        wait_mode: "fixed" waits each command's duration (reference); "adaptive" returns as
            soon as the shell is idle again, never later than the duration. Recorded.
        observation_limit: Bytes of terminal output kept per observation (head and tail).
        agent_timeout_sec: Override of the task's agent timeout (invalid for leaderboards).
        private_guidance: Text the model sees before the conversation in every call but
            which is never part of the recorded messages (the RSR executor's runbook).
    """
    config = Terminus2Config(
        max_episodes=max_episodes, temperature=temperature, reply_format=reply_format,
        context_window=context_window, summarise_free_tokens=summarise_free_tokens,
        wait_mode=wait_mode, observation_limit=observation_limit,
        agent_timeout_sec=agent_timeout_sec, private_guidance=private_guidance)

    async def execute(state: AgentState) -> AgentState:
        return await TerminalHarness(config)(state)

    return execute
